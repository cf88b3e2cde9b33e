-- The near-duplicate index in the warehouse: each kept pair's MinHash band keys, so that an ingest loads only
-- the signatures of pairs that share a key with its own batch, not every signature ever kept. `doc` numbers
-- the kept pairs in the order they were stored (an ingest asks only for pairs stored before it started).
-- Band keys of pairs kept before this migration are filled in by the next ingest (they are computed from
-- the signatures, which SQL cannot do).
ALTER TABLE pair_signatures ADD COLUMN doc BIGINT;
CREATE TABLE pair_band_keys (
    key               UBIGINT NOT NULL,      -- a band's key, salted by the band's number
    doc               BIGINT NOT NULL        -- pair_signatures.doc
);
