-- A version's measured GPU-seconds on the dashboard beside its token counts: what its configuration's judge runs
-- measured (build-version's `stats.cost`: whole, per judge kind, per kept pair; NULL for a version built before
-- GPU-seconds were measured).
CREATE OR REPLACE VIEW dash_version_costs AS
SELECT v.name AS dataset, v.version, v.row_count AS kept, count(j.pair_id) AS judgments,
       count(DISTINCT j.judge_run_id) AS judge_runs, coalesce(sum(j.requests), 0) AS requests,
       coalesce(sum(j.tokens_in), 0) AS tokens_in, coalesce(sum(j.tokens_out), 0) AS tokens_out,
       coalesce(sum(j.latency_s), 0) AS request_seconds,
       TRY_CAST(v.stats->>'$.cost.gpu_seconds' AS DOUBLE) AS gpu_seconds,
       TRY_CAST(v.stats->>'$.cost.gpu_seconds_per_kept_pair' AS DOUBLE) AS gpu_seconds_per_kept_pair,
       v.stats->>'$.cost.gpu_seconds_by_judge' AS gpu_seconds_by_judge
FROM dataset_versions v LEFT JOIN judgments j
  ON j.judge_config_id = v.judge_config_id AND j.finished_at <= v.created_at
GROUP BY ALL ORDER BY v.name, v.version;
