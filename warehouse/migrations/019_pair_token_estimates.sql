-- Each pair's token estimates by part, as the ingest makes them (`tasks.ingest.normalize.TextFacts`): the prompt
-- (every history message, 8 chat-template tokens each) and each answer (its 8 included). A version's token
-- lengths are these columns, read by pair id, instead of counting through every kept text again.
ALTER TABLE candidate_pairs ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE candidate_pairs ADD COLUMN response_a_tokens INTEGER;
ALTER TABLE candidate_pairs ADD COLUMN response_b_tokens INTEGER;

-- Pairs ingested before, once, by the same estimate: one token per 3 UTF-8 bytes of the text that is not a
-- digit (rounded up), and one per ASCII digit (a digit is one byte, one character).
CREATE TEMP MACRO text_tokens(t) AS
    CAST(ceil((strlen(t) - (length(t) - length(translate(t, '0123456789', '')))) / 3) AS INTEGER)
    + (length(t) - length(translate(t, '0123456789', '')));
UPDATE candidate_pairs SET
    prompt_tokens = coalesce(list_sum([8 + text_tokens(m.content) FOR m IN history]), 0),
    response_a_tokens = 8 + text_tokens(response_a),
    response_b_tokens = 8 + text_tokens(response_b);
DROP MACRO text_tokens;

