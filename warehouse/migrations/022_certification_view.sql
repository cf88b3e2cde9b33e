-- A certified version's certification for the dashboard: its stored `stats.certification` whole (the figures
-- of the card's first paragraph, the risk-coverage curve, the review queue of the pairs it did not accept), so
-- the page reads the one figure the card, `curate status` and `build-version --json` read.
CREATE OR REPLACE VIEW dash_certification AS
SELECT v.name AS dataset, v.version, v.simulated, CAST((v.stats->'$.certification') AS VARCHAR) AS certification
FROM dataset_versions v
WHERE (v.stats->'$.certification') IS NOT NULL
ORDER BY v.name, v.version;
