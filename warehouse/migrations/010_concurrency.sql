-- How many requests each judge run kept in flight per endpoint, and how it found that (the server's
-- /metrics gauges, observed throughput, or a fixed --max-in-flight): from the run's summary.
CREATE OR REPLACE VIEW dash_judge_throughput AS
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
       round((coalesce(j.tokens_in, 0) + coalesce(j.tokens_out, 0)) / nullif(seconds, 0), 1) AS tokens_per_s,
       CAST(r.summary->'concurrency' AS VARCHAR) AS concurrency
FROM judge_runs r LEFT JOIN per_run j USING (run_id)
ORDER BY r.started_at DESC;
