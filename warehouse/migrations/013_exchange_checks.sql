-- What the merge of the judge exchange would not trust: rows that did not answer their shard's plan or held
-- an incoherent verdict (rejected, never merged), and files it moved aside under the exchange's quarantine/.

CREATE TABLE exchange_rejects (
    file_key          VARCHAR NOT NULL,      -- the result file the row came in
    pair_id           VARCHAR,
    "order"           VARCHAR,
    sample_index      INTEGER,
    reason            VARCHAR NOT NULL,      -- not_planned | wrong_config | unplanned_slot | wrong_run | bad_verdict ...
    row_json          VARCHAR NOT NULL,      -- the row as it was written
    rejected_at       TIMESTAMP NOT NULL
);

CREATE TABLE exchange_quarantine (
    file_key          VARCHAR NOT NULL,      -- where it was, relative to the exchange
    moved_to          VARCHAR NOT NULL,
    reason            VARCHAR NOT NULL,
    quarantined_at    TIMESTAMP NOT NULL
);
