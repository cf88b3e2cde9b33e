-- Judge quality checks on benchmarks (RM-Bench, JudgeBench): the judgments of benchmark comparisons (kept
-- apart from the curation pairs' judgments, same layout and the same cache rule), and each evaluation's scores.

CREATE TABLE eval_judgments AS FROM judgments WITH NO DATA;  -- pair_id holds the comparison's item id
ALTER TABLE eval_judgments ADD PRIMARY KEY (pair_id, judge_config_id, "order", sample_index);

CREATE TABLE judge_evaluations (
    evaluation_id     VARCHAR PRIMARY KEY,   -- the flow run id
    benchmark         VARCHAR NOT NULL,      -- rm-bench | judgebench
    benchmark_revision VARCHAR NOT NULL,     -- file hash or Hub revision
    judge_config_id   VARCHAR NOT NULL,
    strategy          VARCHAR NOT NULL,
    endpoints         VARCHAR[] NOT NULL,
    served_models     VARCHAR[] NOT NULL,
    pairs             INTEGER NOT NULL,
    scored            INTEGER NOT NULL,
    failed            INTEGER NOT NULL,
    accuracy          DOUBLE,
    result            JSON NOT NULL,         -- by category, difficulty, matrix, model card, outcomes
    requests          INTEGER NOT NULL,
    tokens_in         BIGINT NOT NULL,
    tokens_out        BIGINT NOT NULL,
    seconds           DOUBLE NOT NULL,
    created_at        TIMESTAMP NOT NULL
);
