-- The funnel counts distinct rows (a re-read of the same revision is shown apart as `re_reads`, never
-- added again), and the dashboard can tell when what it shows was judged by the SIMULATED stand-in.
CREATE OR REPLACE VIEW dash_funnel AS
WITH reads AS (
    SELECT source, CAST(sum(CAST(summary->>'read' AS BIGINT)) AS BIGINT) AS rows_read_in_runs
    FROM ingest_runs WHERE status = 'completed' GROUP BY source
), sightings AS (
    SELECT source, count(*) AS valid FROM pair_sightings GROUP BY source
), quarantined AS (
    SELECT source, count(*) AS quarantined FROM quarantine GROUP BY source
), pairs AS (
    SELECT source, count(*) AS unique_pairs FROM candidate_pairs GROUP BY source
), curation AS (
    SELECT source, count(*) AS for_curation,
           count(*) FILTER (WHERE EXISTS (SELECT 1 FROM judgments j WHERE j.pair_id = p.pair_id AND j.status = 'ok')) AS judged
    FROM pairs_for_curation p GROUP BY source
), kept AS (
    SELECT r.name AS dataset, r.version, r.source, count(*) AS kept
    FROM dataset_rows r JOIN dash_latest_versions v USING (name, version) GROUP BY ALL
)
SELECT s.source,
       CAST(coalesce(sightings.valid, 0) + coalesce(quarantined.quarantined, 0) AS BIGINT) AS read,
       CAST(coalesce(sightings.valid, 0) AS BIGINT) AS valid,
       CAST(coalesce(quarantined.quarantined, 0) AS BIGINT) AS quarantined,
       CAST(coalesce(pairs.unique_pairs, 0) AS BIGINT) AS unique_pairs,
       CAST(coalesce(curation.for_curation, 0) AS BIGINT) AS for_curation,
       CAST(coalesce(curation.judged, 0) AS BIGINT) AS judged,
       kept.dataset, kept.version, CAST(coalesce(kept.kept, 0) AS BIGINT) AS kept,
       CAST(greatest(coalesce(reads.rows_read_in_runs, 0) - coalesce(sightings.valid, 0)
                     - coalesce(quarantined.quarantined, 0), 0) AS BIGINT) AS re_reads
FROM (SELECT source FROM reads UNION SELECT source FROM pairs UNION SELECT source FROM quarantined) s
LEFT JOIN reads USING (source) LEFT JOIN sightings USING (source) LEFT JOIN quarantined USING (source)
LEFT JOIN pairs USING (source) LEFT JOIN curation USING (source) LEFT JOIN kept USING (source)
ORDER BY s.source, kept.dataset;

-- Judge configurations with what they judged: `simulated` ones were answered by the stand-in.
CREATE OR REPLACE VIEW dash_judge_configs AS
SELECT c.judge_config_id, c.model, c.simulated OR EXISTS (
           SELECT 1 FROM judgments j WHERE j.judge_config_id = c.judge_config_id AND j.served_model LIKE '%SIMULATED%')
       AS simulated,
       (SELECT count(*) FROM judgments j WHERE j.judge_config_id = c.judge_config_id) AS judgments,
       (SELECT count(*) FROM eval_judgments j WHERE j.judge_config_id = c.judge_config_id) AS eval_judgments
FROM judge_configs c ORDER BY c.created_at;
