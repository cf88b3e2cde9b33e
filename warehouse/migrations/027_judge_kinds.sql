-- Judges of more than one kind (tasks/judge/kinds): a configuration names its kind, and a reward model's has no
-- sampling (the GenRM's temperature, top_p and max_tokens are NULL for it). A reward model's verdict is a judgment
-- like the GenRM's: its one slot ("order" 'none', sample 0), its margin in margin_a (score(A) - score(B), on its
-- own scale), its two raw scores as JSON in raw_text; the GenRM's score and ranking columns stay NULL.
ALTER TABLE judge_configs ADD COLUMN kind VARCHAR DEFAULT 'genrm';
ALTER TABLE judge_configs ALTER COLUMN temperature DROP NOT NULL;
ALTER TABLE judge_configs ALTER COLUMN top_p DROP NOT NULL;
ALTER TABLE judge_configs ALTER COLUMN max_tokens DROP NOT NULL;

-- A judge ladder (`curate judge --strategy ladder`): the reward model whose verdicts a GenRM configuration's pool
-- reads beside its own (the reward model's margin alone where a pair climbed no further).
CREATE TABLE judge_ladders (
    judge_config_id   VARCHAR NOT NULL,      -- the GenRM's
    rm_config_id      VARCHAR NOT NULL,      -- the reward model's
    linked_at         TIMESTAMP NOT NULL,
    PRIMARY KEY (judge_config_id, rm_config_id)
);
