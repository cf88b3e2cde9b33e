-- Immutable dataset versions: what a policy kept from one judge configuration's verdicts.

CREATE TABLE dataset_versions (
    name              VARCHAR NOT NULL,
    version           INTEGER NOT NULL,
    parent_version    INTEGER,               -- the previous version of this name
    created_at        TIMESTAMP NOT NULL,
    judge_config_id   VARCHAR NOT NULL,
    policy            JSON NOT NULL,
    source_revisions  JSON NOT NULL,         -- source -> revisions of the rows kept
    row_count         INTEGER NOT NULL,
    content_hash      VARCHAR NOT NULL,
    stats             JSON NOT NULL,         -- kept and dropped by reason, splits, distributions
    published_target  VARCHAR,
    published_tag     VARCHAR,
    published_commit  VARCHAR,
    published_at      TIMESTAMP,
    PRIMARY KEY (name, version)
);

CREATE TABLE dataset_rows (
    name              VARCHAR NOT NULL,
    version           INTEGER NOT NULL,
    pair_id           VARCHAR NOT NULL,
    prompt            STRUCT(role VARCHAR, content VARCHAR)[] NOT NULL,
    chosen            VARCHAR NOT NULL,
    rejected          VARCHAR NOT NULL,
    chosen_side       VARCHAR NOT NULL,      -- a | b: which response of the pair the judge prefers
    margin            DOUBLE NOT NULL,       -- mean margin from the chosen side, 0 .. 2.5
    confidence        DOUBLE NOT NULL,
    orders_agree      BOOLEAN,
    scores_agree      BOOLEAN NOT NULL,
    spread            DOUBLE NOT NULL,
    verdicts          INTEGER NOT NULL,
    human_label       DOUBLE,                -- from the chosen side
    human_agrees      BOOLEAN,
    source            VARCHAR NOT NULL,
    source_id         VARCHAR NOT NULL,
    source_revision   VARCHAR NOT NULL,
    domain            VARCHAR,
    language          VARCHAR,
    split             VARCHAR NOT NULL,      -- train | validation
    PRIMARY KEY (name, version, pair_id)
);
