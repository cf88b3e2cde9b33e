-- Personal data and secrets found in each pair's texts (`tasks.ingest.pii`): the kind, the part and the span,
-- never the matched text. The ingest scans a pair once as it lands it; `pii_scans` says which pairs were scanned
-- and under which rules (`tasks.ingest.pii.RULES`), so pairs landed before this migration, or scanned under
-- older rules, are scanned by a backfill (`tasks.ingest.pii_facts.backfill`) without a re-ingest: no pair id
-- changes.
CREATE TABLE pii_scans (
    pair_id      VARCHAR PRIMARY KEY,
    rules        VARCHAR NOT NULL,          -- tasks.ingest.pii.RULES when scanned
    scanned_at   TIMESTAMP NOT NULL
);

CREATE TABLE pii_findings (
    pair_id      VARCHAR NOT NULL,
    part         VARCHAR NOT NULL,          -- history, response_a or response_b
    message      INTEGER NOT NULL,          -- the history message's index (0 for an answer)
    kind         VARCHAR NOT NULL,          -- email, phone, card, iban, ip, ssn, secret (tasks.ingest.pii.KINDS)
    span_start   INTEGER NOT NULL,          -- characters (code points) into the text, end exclusive
    span_end     INTEGER NOT NULL
);

-- What each version did with the personal data and secrets found in its judged pool, per kind (its stored
-- `stats.pii`, the figures the card, `curate status` and `build-version --json` read): the policy's action, the
-- pool's pairs and findings of the kind, and those in the version's rows (replaced by placeholders under redact,
-- as found under keep, none under drop).
CREATE OR REPLACE VIEW dash_personal_data AS
SELECT v.name AS dataset, v.version, t.kind,
       json_extract_string(v.stats, '$.pii.kinds.' || t.kind || '.action') AS action,
       CAST(json_extract(v.stats, '$.pii.kinds.' || t.kind || '.pairs') AS BIGINT) AS pairs,
       CAST(json_extract(v.stats, '$.pii.kinds.' || t.kind || '.findings') AS BIGINT) AS findings,
       CAST(json_extract(v.stats, '$.pii.kinds.' || t.kind || '.version_pairs') AS BIGINT) AS version_pairs,
       CAST(json_extract(v.stats, '$.pii.kinds.' || t.kind || '.version_findings') AS BIGINT) AS version_findings
FROM dataset_versions v, unnest(json_keys(v.stats, '$.pii.kinds')) AS t(kind)
WHERE (v.stats->'$.pii') IS NOT NULL
ORDER BY v.name, v.version, t.kind;
