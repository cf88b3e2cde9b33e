-- The weights a judge server loaded (vLLM's /v1/models `root`) where they are not the judge's published ones: a
-- local folder, another id, or 'unknown: ...' (NULL: the published weights). On the judge configuration, whose id
-- they are part of, and on every version built from its verdicts (its card, `curate status`, the dashboard and
-- the Hub publish then say so). Configurations recorded before this could not tell: they stay NULL.
ALTER TABLE judge_configs ADD COLUMN weights VARCHAR;
ALTER TABLE dataset_versions ADD COLUMN judge_weights VARCHAR;

-- Judge configurations with what they judged: `simulated` ones were answered by the stand-in, those with
-- `weights` by other weights than the judge's published ones.
CREATE OR REPLACE VIEW dash_judge_configs AS
SELECT c.judge_config_id, c.model, c.simulated OR EXISTS (
           SELECT 1 FROM judgments j WHERE j.judge_config_id = c.judge_config_id AND j.served_model LIKE '%SIMULATED%')
       AS simulated,
       (SELECT count(*) FROM judgments j WHERE j.judge_config_id = c.judge_config_id) AS judgments,
       (SELECT count(*) FROM eval_judgments j WHERE j.judge_config_id = c.judge_config_id) AS eval_judgments,
       c.weights
FROM judge_configs c ORDER BY c.created_at;

-- Versions as before (015), with the weights behind them.
CREATE OR REPLACE VIEW dash_versions AS
SELECT v.name AS dataset, v.version, v.parent_version, v.created_at, v.simulated, v.judge_weights,
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
