-- What each source says about its labels and rows, stored beside its pairs, so that a run that does not know a
-- source (a deployment, another host, another build) reads its pairs as they were meant: the calibration's clear
-- label, whether people gave the labels, whether the pairs name their models (the bias audit), the license and
-- description the card states (`tasks.ingest.source_facts.SourceFacts`, as JSON). Every ingest records its
-- source's facts; one that would change their meaning (`meaning_digest`) for a source already in the warehouse is
-- refused.
CREATE TABLE source_facts (
    source           VARCHAR PRIMARY KEY,
    facts            JSON NOT NULL,          -- SourceFacts.to_json(): name, clear_label, names_models, human_labels,
                                             -- license, description, label_meaning, declaration
    meaning_digest   VARCHAR NOT NULL,       -- blake2b-128 of the meaning's canonical JSON (SourceFacts.meaning_digest)
    first_run_id     VARCHAR,                -- the first ingest run that recorded them (NULL: filled by this
    first_at         TIMESTAMP NOT NULL,     -- migration for a source no ingest run is on record for)
    last_run_id      VARCHAR,                -- the latest one
    last_at          TIMESTAMP NOT NULL
);

-- Sources ingested before: their facts as the built-in sources of this release state them (the facts their pairs
-- were landed under; tests/warehouse/test_source_facts.py checks them against the registry), with the first and
-- last ingest runs of each on record. A source this release does not know keeps no facts: readers take the
-- defaults (one step of the scale is a clear preference) and the card says so.
INSERT INTO source_facts
WITH known(source, meaning_digest, facts) AS (VALUES
    ('helpsteer3', 'a3de8673fd91bb9dcb44c386f8528eea',
     '{"clear_label": 2.0, "declaration": null, "description": "HelpSteer3 preference: multi-domain, multi-turn, 3 annotators, -3..3 preference", "human_labels": true, "label_meaning": {"both_bad": "none", "clear": "|label| >= 2 (at least \"better\")", "direction": "positive: response A preferred", "labelled_by": "people (3 annotators)", "mapping": "-overall_preference", "raw": "overall_preference: -3 response 1 (A) much better, -2 better, -1 slightly better, 0 about the same, 1..3 response 2 (B) slightly better / better / much better", "scale": "-3..3 from response A''s side", "tie": 0}, "license": "cc-by-4.0", "name": "helpsteer3", "names_models": false}'),
    ('arena', '3aa579debddfff4a060abfa5765a16aa',
     '{"clear_label": 1.0, "declaration": null, "description": "LMArena human votes between two anonymous models, 2025", "human_labels": true, "label_meaning": {"both_bad": "0 flagged both_bad", "clear": "|label| >= 1", "direction": "positive: response A preferred", "labelled_by": "people (votes)", "mapping": "model_a +1, model_b -1, tie 0, both_bad 0 flagged both_bad", "raw": "winner", "scale": "-1..1 from response A''s side (a vote: no strength)", "tie": 0}, "license": "cc-by-4.0 (prompts); model outputs under their providers'' terms", "name": "arena", "names_models": true}'),
    ('chatbot-arena', '4c0f6cb5c457d360dbc32e30ee55ab9d',
     '{"clear_label": 1.0, "declaration": null, "description": "Chatbot Arena conversations with pairwise human preferences, 2023", "human_labels": true, "label_meaning": {"both_bad": "0 flagged both_bad", "clear": "|label| >= 1", "direction": "positive: response A preferred", "labelled_by": "people (votes)", "mapping": "model_a +1, model_b -1, tie 0, tie (bothbad) 0 flagged both_bad", "raw": "winner", "scale": "-1..1 from response A''s side (a vote: no strength)", "tie": 0}, "license": "see the dataset card (gated; user prompts CC-BY-4.0)", "name": "chatbot-arena", "names_models": true}'),
    ('ultrafeedback', '80d79797cb1a2ebeb581a9b0812b62d1',
     '{"clear_label": 1.0, "declaration": null, "description": "UltraFeedback: 4 completions per instruction rated by GPT-4; the best against each one 1.0 below", "human_labels": false, "label_meaning": {"both_bad": "none", "clear": "|label| >= 1", "direction": "positive: response A preferred", "labelled_by": "GPT-4 (ratings)", "mapping": "A''s fine-grained_score minus B''s, capped at 3", "raw": "fine-grained_score (1..5) of each completion", "scale": "-3..3 from response A''s side", "tie": "none (pairs differ by 1.0 or more)"}, "license": "mit", "name": "ultrafeedback", "names_models": true}')),
present AS (SELECT DISTINCT source FROM candidate_pairs),
runs AS (
    SELECT source, arg_min(run_id, started_at) AS first_run_id, min(started_at) AS first_at,
           arg_max(run_id, started_at) AS last_run_id, max(started_at) AS last_at
    FROM ingest_runs GROUP BY source)
SELECT k.source, k.facts, k.meaning_digest, r.first_run_id, coalesce(r.first_at, timezone('UTC', now())),
       r.last_run_id, coalesce(r.last_at, timezone('UTC', now()))
FROM known k JOIN present USING (source) LEFT JOIN runs r USING (source);
