-- Runs say which process ran them, so that one killed mid-run is marked `interrupted` by the next
-- command that opens the warehouse for writing, instead of staying `running` forever.
ALTER TABLE ingest_runs ADD COLUMN pid INTEGER;
ALTER TABLE ingest_runs ADD COLUMN host VARCHAR;
ALTER TABLE ingest_runs ADD COLUMN interrupted_at TIMESTAMP;
ALTER TABLE judge_runs ADD COLUMN pid INTEGER;
ALTER TABLE judge_runs ADD COLUMN host VARCHAR;
ALTER TABLE judge_runs ADD COLUMN interrupted_at TIMESTAMP;

-- `attempts` counts answers that came back (the cross-run attempt limit); `requests` counts every HTTP
-- request, time-outs and 5xx included, which never exhaust a judgment.
ALTER TABLE judgments ADD COLUMN requests INTEGER DEFAULT 0;
ALTER TABLE eval_judgments ADD COLUMN requests INTEGER DEFAULT 0;
UPDATE judgments SET requests = attempts;
UPDATE eval_judgments SET requests = attempts;

CREATE OR REPLACE VIEW dash_version_costs AS
SELECT v.name AS dataset, v.version, v.row_count AS kept, count(j.pair_id) AS judgments,
       count(DISTINCT j.judge_run_id) AS judge_runs, coalesce(sum(j.requests), 0) AS requests,
       coalesce(sum(j.tokens_in), 0) AS tokens_in, coalesce(sum(j.tokens_out), 0) AS tokens_out,
       coalesce(sum(j.latency_s), 0) AS request_seconds
FROM dataset_versions v LEFT JOIN judgments j
  ON j.judge_config_id = v.judge_config_id AND j.finished_at <= v.created_at
GROUP BY ALL ORDER BY v.name, v.version;
