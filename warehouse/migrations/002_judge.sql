-- Judging: configurations, runs, and one row per (pair, configuration, order, sample).

CREATE TABLE judge_configs (
    judge_config_id   VARCHAR PRIMARY KEY,   -- hash of everything that changes a verdict
    model             VARCHAR NOT NULL,
    served_revision   VARCHAR NOT NULL,
    prompt_version    VARCHAR NOT NULL,
    temperature       DOUBLE NOT NULL,
    top_p             DOUBLE NOT NULL,
    max_tokens        INTEGER NOT NULL,
    created_at        TIMESTAMP NOT NULL
);

CREATE TABLE judge_runs (
    run_id            VARCHAR PRIMARY KEY,
    judge_config_id   VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    endpoints         VARCHAR[] NOT NULL,
    shard             VARCHAR,               -- "i/n" or NULL for all pairs
    started_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP,
    status            VARCHAR NOT NULL,      -- running | completed | failed
    summary           JSON,
    error             VARCHAR
);

-- The key is the cache: a judgment with status 'ok' is never requested again.
CREATE TABLE judgments (
    pair_id           VARCHAR NOT NULL,
    judge_config_id   VARCHAR NOT NULL,
    "order"           VARCHAR NOT NULL,      -- ab | ba
    sample_index      INTEGER NOT NULL,
    status            VARCHAR NOT NULL,      -- ok | failed
    score_1           INTEGER,               -- as shown
    score_2           INTEGER,
    ranking           INTEGER,               -- as shown: 1 = response_1 much better ... 6
    score_a           INTEGER,               -- mapped to response A's side
    score_b           INTEGER,
    ranking_a         INTEGER,
    margin_a          DOUBLE,                -- 3.5 - ranking_a
    failure_reason    VARCHAR,               -- truncated | no_json | http_500 | timeout | ...
    error             VARCHAR,
    raw_text          VARCHAR,               -- the completion as returned (reasoning included)
    reasoning         VARCHAR,               -- vLLM's separate reasoning field, when a parser is on
    finish_reason     VARCHAR,
    tokens_in         INTEGER,
    tokens_out        INTEGER,
    latency_s         DOUBLE,
    attempts          INTEGER NOT NULL,      -- requests made for this judgment, over all runs
    endpoint          VARCHAR,
    served_model      VARCHAR,               -- the model name the server answered with
    judge_run_id      VARCHAR NOT NULL,
    finished_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (pair_id, judge_config_id, "order", sample_index)
);
