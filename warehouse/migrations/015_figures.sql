-- One truth per figure: the versions view reads each version's figures from its stored statistics
-- (tasks/curate/figures.py defines them; the card and `curate status` read the same), and the funnel tells
-- rows read again by later runs apart from rows repeated inside one file.

-- Versions with their parent, what changed, whether SIMULATED verdicts are behind them, and their figures.
CREATE OR REPLACE VIEW dash_versions AS
SELECT v.name AS dataset, v.version, v.parent_version, v.created_at, v.simulated,
       TRY_CAST(v.stats->>'$.pairs_judged' AS BIGINT) AS pairs_judged, v.row_count,
       TRY_CAST(v.stats->>'$.human_agreement.kept.rate' AS DOUBLE) AS agreement,
       TRY_CAST(v.stats->>'$.human_agreement.kept.agree' AS BIGINT) AS agree,
       TRY_CAST(v.stats->>'$.human_agreement.kept.comparable' AS BIGINT) AS comparable,
       TRY_CAST(v.stats->>'$.human_agreement.kept.human_ties' AS BIGINT) AS human_ties,
       TRY_CAST(v.stats->>'$.human_agreement.kept.both_bad' AS BIGINT) AS both_bad,
       TRY_CAST(v.stats->>'$.human_agreement.pool.rate' AS DOUBLE) AS pool_agreement,
       v.content_hash, v.judge_config_id, v.published_target, v.published_tag,
       (SELECT count(*) FROM dataset_rows c WHERE c.name = v.name AND c.version = v.version AND NOT EXISTS (
            SELECT 1 FROM dataset_rows p WHERE p.name = v.name AND p.version = v.parent_version AND p.pair_id = c.pair_id)) AS added,
       (SELECT count(*) FROM dataset_rows p WHERE p.name = v.name AND p.version = v.parent_version AND NOT EXISTS (
            SELECT 1 FROM dataset_rows c WHERE c.name = v.name AND c.version = v.version AND c.pair_id = p.pair_id)) AS removed,
       (SELECT count(*) FROM dataset_rows c JOIN dataset_rows p ON p.pair_id = c.pair_id
        WHERE c.name = v.name AND c.version = v.version AND p.name = v.name AND p.version = v.parent_version
          AND c.chosen_side <> p.chosen_side) AS flipped
FROM dataset_versions v ORDER BY v.name, v.version;

-- Distinct rows per source as before; `re_reads` are rows a run read that an earlier run had recorded (its
-- summary's already-ingested and already-quarantined rows), `repeats` the rest of what runs read beyond the
-- distinct rows: the same row (same source id) more than once in one file.
CREATE OR REPLACE VIEW dash_funnel AS
WITH reads AS (
    SELECT source, CAST(sum(CAST(summary->>'read' AS BIGINT)) AS BIGINT) AS rows_read_in_runs,
           CAST(sum(coalesce(CAST(summary->>'already_ingested' AS BIGINT), 0)
                    + greatest(coalesce(CAST(summary->>'quarantined_rows' AS BIGINT), 0)
                               - coalesce(CAST(summary->>'new_quarantined' AS BIGINT),
                                          CAST(summary->>'quarantined_rows' AS BIGINT), 0), 0)) AS BIGINT) AS re_reads
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
       CAST(coalesce(reads.re_reads, 0) AS BIGINT) AS re_reads,
       CAST(greatest(coalesce(reads.rows_read_in_runs, 0) - coalesce(reads.re_reads, 0) - coalesce(sightings.valid, 0)
                     - coalesce(quarantined.quarantined, 0), 0) AS BIGINT) AS repeats
FROM (SELECT source FROM reads UNION SELECT source FROM pairs UNION SELECT source FROM quarantined) s
LEFT JOIN reads USING (source) LEFT JOIN sightings USING (source) LEFT JOIN quarantined USING (source)
LEFT JOIN pairs USING (source) LEFT JOIN curation USING (source) LEFT JOIN kept USING (source)
ORDER BY s.source, kept.dataset;
