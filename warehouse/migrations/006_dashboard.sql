-- Dashboard views: what the data team reads every day. Each is plain SQL over the tables, copied into
-- the dashboard's snapshot after every pipeline stage (see warehouse/snapshot.py).

-- Every run of every kind, newest first.
CREATE VIEW dash_runs AS
SELECT 'ingest' AS kind, run_id, source AS subject, started_at, finished_at, status,
       date_diff('millisecond', started_at, finished_at) / 1000.0 AS seconds, error, summary
FROM ingest_runs
UNION ALL
SELECT 'judge', run_id, coalesce('shard ' || shard, 'all pairs') || ' · ' || strategy, started_at, finished_at,
       status, date_diff('millisecond', started_at, finished_at) / 1000.0, error, summary
FROM judge_runs
UNION ALL
SELECT 'evaluate', evaluation_id, benchmark, created_at - to_microseconds(CAST(seconds * 1e6 AS BIGINT)), created_at,
       'completed', seconds, NULL, result
FROM judge_evaluations
ORDER BY started_at DESC;

-- The newest version of each dataset.
CREATE VIEW dash_latest_versions AS
SELECT * FROM dataset_versions QUALIFY row_number() OVER (PARTITION BY name ORDER BY version DESC) = 1;

-- Yield per source: rows read and valid (over completed ingest runs), unique pairs, pairs going on to
-- curation, pairs with a verdict, and pairs kept in the newest version of each dataset.
CREATE VIEW dash_funnel AS
WITH reads AS (
    SELECT source, CAST(sum(CAST(summary->>'read' AS BIGINT)) AS BIGINT) AS read,
           CAST(sum(CAST(summary->>'valid' AS BIGINT)) AS BIGINT) AS valid,
           CAST(sum(CAST(summary->>'quarantined_rows' AS BIGINT)) AS BIGINT) AS quarantined
    FROM ingest_runs WHERE status = 'completed' GROUP BY source
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
SELECT s.source, coalesce(reads.read, 0) AS read, coalesce(reads.valid, 0) AS valid,
       coalesce(reads.quarantined, 0) AS quarantined, coalesce(pairs.unique_pairs, 0) AS unique_pairs,
       coalesce(curation.for_curation, 0) AS for_curation, coalesce(curation.judged, 0) AS judged,
       kept.dataset, kept.version, coalesce(kept.kept, 0) AS kept
FROM (SELECT source FROM reads UNION SELECT source FROM pairs) s
LEFT JOIN reads USING (source) LEFT JOIN pairs USING (source) LEFT JOIN curation USING (source)
LEFT JOIN kept USING (source)
ORDER BY s.source, kept.dataset;

-- Per pair and judge configuration: the mean A-side margin of its 'ok' verdicts and the human label.
CREATE VIEW dash_pair_verdicts AS
SELECT j.judge_config_id, p.pair_id, p.source, coalesce(p.domain, '(none)') AS domain, p.language,
       avg(j.margin_a) AS margin_a, count(*) AS verdicts, p.human_label, p.both_bad
FROM judgments j JOIN pairs_for_curation p USING (pair_id)
WHERE j.status = 'ok'
GROUP BY ALL;

-- Distribution of |mean margin| per source (judge configuration), in bins of 0.5 ranking units.
CREATE VIEW dash_margin_histogram AS
SELECT judge_config_id, source, domain, floor(abs(margin_a) * 2) / 2 AS abs_margin_bin, count(*) AS pairs
FROM dash_pair_verdicts GROUP BY ALL ORDER BY ALL;

-- Distribution of confidence in each version, in bins of 0.1.
CREATE VIEW dash_confidence_histogram AS
SELECT name AS dataset, version, source, coalesce(domain, '(none)') AS domain,
       least(floor(confidence * 10) / 10, 0.9) AS confidence_bin, count(*) AS pairs
FROM dataset_rows GROUP BY ALL ORDER BY ALL;

-- Does the judge agree with the human label? Pairs where both prefer a side (human ties, judge ties and
-- both-bad votes are counted apart).
CREATE VIEW dash_agreement AS
SELECT judge_config_id, source, domain, count(*) AS pairs,
       count(*) FILTER (WHERE human_label IS NOT NULL AND human_label <> 0 AND margin_a <> 0 AND NOT both_bad) AS comparable,
       count(*) FILTER (WHERE human_label IS NOT NULL AND human_label <> 0 AND margin_a <> 0 AND NOT both_bad
                        AND sign(human_label) = sign(margin_a)) AS agree,
       round(100.0 * agree / nullif(comparable, 0), 2) AS agreement_pct,
       count(*) FILTER (WHERE human_label = 0 OR both_bad) AS human_ties,
       count(*) FILTER (WHERE margin_a = 0) AS judge_ties
FROM dash_pair_verdicts GROUP BY ALL ORDER BY ALL;

-- Judge failures by reason (the latest state of each judgment), per configuration.
CREATE VIEW dash_judge_failures AS
SELECT judge_config_id, failure_reason, count(*) AS judgments, max(attempts) AS max_attempts
FROM judgments WHERE status = 'failed' GROUP BY ALL ORDER BY judgments DESC;

-- Throughput and tokens per judge run (from the judgments each run wrote).
CREATE VIEW dash_judge_throughput AS
WITH per_run AS (
    SELECT judge_run_id AS run_id, count(*) AS judgments, count(*) FILTER (WHERE status = 'ok') AS ok,
           sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out, sum(latency_s) AS request_seconds
    FROM judgments GROUP BY judge_run_id
)
SELECT r.run_id, r.judge_config_id, r.strategy, r.shard, r.status, r.started_at, r.finished_at,
       date_diff('millisecond', r.started_at, r.finished_at) / 1000.0 AS seconds,
       coalesce(j.judgments, 0) AS judgments, coalesce(j.ok, 0) AS ok, coalesce(j.tokens_in, 0) AS tokens_in,
       coalesce(j.tokens_out, 0) AS tokens_out, coalesce(j.request_seconds, 0) AS request_seconds,
       round(coalesce(j.judgments, 0) / nullif(seconds, 0), 3) AS judgments_per_s,
       round((coalesce(j.tokens_in, 0) + coalesce(j.tokens_out, 0)) / nullif(seconds, 0), 1) AS tokens_per_s
FROM judge_runs r LEFT JOIN per_run j USING (run_id)
ORDER BY r.started_at DESC;

-- Versions with their parent and what changed: pairs added, removed, and flipped (the chosen side changed).
CREATE VIEW dash_versions AS
SELECT v.name AS dataset, v.version, v.parent_version, v.created_at, v.row_count, v.content_hash,
       v.judge_config_id, v.published_target, v.published_tag,
       (SELECT count(*) FROM dataset_rows c WHERE c.name = v.name AND c.version = v.version AND NOT EXISTS (
            SELECT 1 FROM dataset_rows p WHERE p.name = v.name AND p.version = v.parent_version AND p.pair_id = c.pair_id)) AS added,
       (SELECT count(*) FROM dataset_rows p WHERE p.name = v.name AND p.version = v.parent_version AND NOT EXISTS (
            SELECT 1 FROM dataset_rows c WHERE c.name = v.name AND c.version = v.version AND c.pair_id = p.pair_id)) AS removed,
       (SELECT count(*) FROM dataset_rows c JOIN dataset_rows p ON p.pair_id = c.pair_id
        WHERE c.name = v.name AND c.version = v.version AND p.name = v.name AND p.version = v.parent_version
          AND c.chosen_side <> p.chosen_side) AS flipped
FROM dataset_versions v ORDER BY v.name, v.version;

-- What judging cost, per version: every judgment of its configuration finished by the time it was built.
CREATE VIEW dash_version_costs AS
SELECT v.name AS dataset, v.version, v.row_count AS kept, count(j.pair_id) AS judgments,
       count(DISTINCT j.judge_run_id) AS judge_runs, coalesce(sum(j.attempts), 0) AS requests,
       coalesce(sum(j.tokens_in), 0) AS tokens_in, coalesce(sum(j.tokens_out), 0) AS tokens_out,
       coalesce(sum(j.latency_s), 0) AS request_seconds
FROM dataset_versions v LEFT JOIN judgments j
  ON j.judge_config_id = v.judge_config_id AND j.finished_at <= v.created_at
GROUP BY ALL ORDER BY v.name, v.version;

-- Judge quality checks, newest first.
CREATE VIEW dash_judge_evaluations AS
SELECT evaluation_id, benchmark, created_at, judge_config_id, strategy, served_models, pairs, scored, failed,
       accuracy, CAST(result->'model_card'->>'overall' AS DOUBLE) AS model_card_accuracy,
       result->'by_category' AS by_category, tokens_in, tokens_out, seconds
FROM judge_evaluations ORDER BY created_at DESC;
