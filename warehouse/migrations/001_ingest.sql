-- Ingest: runs, candidate pairs, how each source row was seen, quarantine, duplicates, contamination.

CREATE TABLE ingest_runs (
    run_id            VARCHAR PRIMARY KEY,
    source            VARCHAR NOT NULL,
    location          VARCHAR NOT NULL,      -- hub repo id or local path
    source_revision   VARCHAR NOT NULL,      -- commit sha for the Hub, content hash for a file
    started_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP,
    status            VARCHAR NOT NULL,      -- running | completed | failed
    summary           JSON,                  -- the run's summary, as `curate ingest --json` prints it
    settings          JSON,
    error             VARCHAR
);

CREATE TABLE candidate_pairs (
    pair_id           VARCHAR PRIMARY KEY,   -- hash of normalized history + unordered responses
    source            VARCHAR NOT NULL,
    source_id         VARCHAR NOT NULL,
    source_revision   VARCHAR NOT NULL,
    history           STRUCT(role VARCHAR, content VARCHAR)[] NOT NULL,
    response_a        VARCHAR NOT NULL,
    response_b        VARCHAR NOT NULL,
    human_label       DOUBLE,                -- from response A's side: >0 A preferred, 0 tie, NULL none
    raw_label         VARCHAR,
    both_bad          BOOLEAN NOT NULL,
    domain            VARCHAR,
    language          VARCHAR,
    metadata          JSON,
    est_tokens        INTEGER NOT NULL,
    ingest_run_id     VARCHAR NOT NULL,
    ingested_at       TIMESTAMP NOT NULL
);

-- Every (source, source id, pair) ever read: the first sighting made the pair, later ones are exact
-- duplicates. Re-reading a row already here adds nothing.
CREATE TABLE pair_sightings (
    source            VARCHAR NOT NULL,
    source_id         VARCHAR NOT NULL,
    pair_id           VARCHAR NOT NULL,
    source_revision   VARCHAR NOT NULL,
    human_label       DOUBLE,                -- in this sighting's own A/B orientation
    raw_label         VARCHAR,
    swapped           BOOLEAN NOT NULL,      -- this sighting's A is the pair's B
    is_first          BOOLEAN NOT NULL,
    ingest_run_id     VARCHAR NOT NULL,
    seen_at           TIMESTAMP NOT NULL,
    PRIMARY KEY (source, source_id, pair_id)
);

CREATE TABLE quarantine (
    source            VARCHAR NOT NULL,
    row_hash          VARCHAR NOT NULL,
    source_id         VARCHAR,
    source_revision   VARCHAR NOT NULL,
    stage             VARCHAR NOT NULL,      -- read | raw | adapter | pair
    reasons           VARCHAR[] NOT NULL,
    detail            VARCHAR,
    position          VARCHAR,               -- file:line or split[index]
    raw_row           VARCHAR NOT NULL,      -- the row as read, JSON or the unreadable line
    ingest_run_id     VARCHAR NOT NULL,
    quarantined_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (source, row_hash, position)
);

CREATE TABLE near_duplicates (
    pair_id           VARCHAR PRIMARY KEY,
    kept_pair_id      VARCHAR NOT NULL,
    similarity        DOUBLE NOT NULL,       -- estimated Jaccard of shingles
    ingest_run_id     VARCHAR NOT NULL
);

-- MinHash signatures of the pairs kept (not near duplicates): later runs compare against them.
CREATE TABLE pair_signatures (
    pair_id           VARCHAR PRIMARY KEY,
    num_perm          INTEGER NOT NULL,
    signature         BLOB NOT NULL          -- num_perm little-endian uint32
);

CREATE TABLE eval_prompts (
    benchmark         VARCHAR NOT NULL,
    benchmark_id      VARCHAR NOT NULL,
    prompt            VARCHAR NOT NULL,
    source_revision   VARCHAR NOT NULL,
    loaded_at         TIMESTAMP NOT NULL,
    PRIMARY KEY (benchmark, benchmark_id)
);

CREATE TABLE contamination (
    pair_id           VARCHAR NOT NULL,
    benchmark         VARCHAR NOT NULL,
    benchmark_id      VARCHAR NOT NULL,
    overlap           DOUBLE NOT NULL,
    detected_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (pair_id, benchmark, benchmark_id)
);

-- The Hub revision each source is pinned to: resolved once, reused until changed on purpose.
CREATE TABLE source_pins (
    source            VARCHAR PRIMARY KEY,
    hub_id            VARCHAR NOT NULL,
    revision          VARCHAR NOT NULL,
    pinned_at         TIMESTAMP NOT NULL
);

-- Pairs that go on to judging and curation: unique, not near duplicates, not contaminated.
CREATE VIEW pairs_for_curation AS
SELECT p.*
FROM candidate_pairs p
WHERE NOT EXISTS (SELECT 1 FROM near_duplicates n WHERE n.pair_id = p.pair_id)
  AND NOT EXISTS (SELECT 1 FROM contamination c WHERE c.pair_id = p.pair_id);

CREATE VIEW quarantine_reasons AS
SELECT source, reason, count(*) AS rows
FROM (SELECT source, unnest(reasons) AS reason FROM quarantine)
GROUP BY ALL
ORDER BY rows DESC;

CREATE VIEW near_duplicate_clusters AS
SELECT kept_pair_id, count(*) + 1 AS members, list(pair_id ORDER BY pair_id) AS duplicates,
       min(similarity) AS min_similarity
FROM near_duplicates
GROUP BY kept_pair_id;
