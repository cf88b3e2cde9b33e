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

