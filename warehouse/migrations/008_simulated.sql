-- Verdicts of the SIMULATED stand-in are marked as such: on their judge configuration, and on every
-- version built from them (its card, the dashboard and the Hub publish then say so).
ALTER TABLE judge_configs ADD COLUMN simulated BOOLEAN DEFAULT false;
ALTER TABLE dataset_versions ADD COLUMN simulated BOOLEAN DEFAULT false;

-- Earlier judgments tell which configurations the stand-in answered for (its model name says SIMULATED).
UPDATE judge_configs SET simulated = true WHERE judge_config_id IN (
    SELECT DISTINCT judge_config_id FROM judgments WHERE served_model LIKE '%SIMULATED%'
    UNION SELECT DISTINCT judge_config_id FROM eval_judgments WHERE served_model LIKE '%SIMULATED%');
UPDATE dataset_versions SET simulated = true WHERE judge_config_id IN (
    SELECT judge_config_id FROM judge_configs WHERE simulated);
