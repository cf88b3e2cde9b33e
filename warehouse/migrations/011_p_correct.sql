-- The calibrated probability that a kept pair's direction matches a clear human preference, beside the
-- heuristic confidence (NULL where too few pairs carried a clear human label to fit it).
ALTER TABLE dataset_rows ADD COLUMN p_correct DOUBLE;

-- Calibration and bias per version, from its stored statistics: the dashboard's view of what the filter did.
CREATE OR REPLACE VIEW dash_version_quality AS
SELECT v.name AS dataset, v.version, v.simulated,
       v.stats->>'$.calibration.status' AS calibration,
       TRY_CAST(v.stats->>'$.calibration.labelled' AS BIGINT) AS labelled_pairs,
       TRY_CAST(v.stats->>'$.calibration.ece' AS DOUBLE) AS ece,
       TRY_CAST(v.stats->>'$.calibration.brier' AS DOUBLE) AS brier,
       TRY_CAST(v.stats->>'$.calibration.kept_mean_p_correct' AS DOUBLE) AS kept_mean_p_correct,
       TRY_CAST(v.stats->>'$.bias.pool.chosen_longer_share' AS DOUBLE) AS pool_chosen_longer,
       TRY_CAST(v.stats->>'$.bias.kept.chosen_longer_share' AS DOUBLE) AS kept_chosen_longer,
       TRY_CAST(v.stats->>'$.bias.pool.chosen_more_markdown_share' AS DOUBLE) AS pool_more_markdown,
       TRY_CAST(v.stats->>'$.bias.kept.chosen_more_markdown_share' AS DOUBLE) AS kept_more_markdown,
       TRY_CAST(v.stats->>'$.bias.pool.chosen_first_share' AS DOUBLE) AS pool_chosen_first,
       TRY_CAST(v.stats->>'$.bias.kept.chosen_first_share' AS DOUBLE) AS kept_chosen_first
FROM dataset_versions v ORDER BY v.name, v.version;

-- The reliability diagram's bins of each version (mean predicted p_correct against the observed rate).
CREATE OR REPLACE VIEW dash_reliability AS
SELECT v.name AS dataset, v.version,
       TRY_CAST(b->>'$.predicted' AS DOUBLE) AS predicted, TRY_CAST(b->>'$.observed' AS DOUBLE) AS observed,
       TRY_CAST(b->>'$.count' AS BIGINT) AS pairs
FROM dataset_versions v, unnest(CAST(coalesce(v.stats->'$.calibration.bins', '[]') AS JSON[])) AS t(b)
ORDER BY v.name, v.version, predicted;

-- Arena rows: each model family's win rate (chosen over rejected) in the judged pool and in each version.
CREATE OR REPLACE VIEW dash_model_families AS
SELECT v.name AS dataset, v.version, s.stage, f.key AS family,
       TRY_CAST(f.value->>'$.pairs' AS BIGINT) AS pairs, TRY_CAST(f.value->>'$.wins' AS BIGINT) AS wins,
       TRY_CAST(f.value->>'$.win_rate' AS DOUBLE) AS win_rate
FROM dataset_versions v,
     (VALUES ('pool'), ('kept')) AS s(stage),
     json_each(coalesce(v.stats->'$.bias'->s.stage->'$.model_families', '{}')) AS f
ORDER BY v.name, v.version, s.stage DESC, pairs DESC;
