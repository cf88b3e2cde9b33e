-- Every pair has its token estimates by part (019 filled those of pairs ingested before; the ingest writes
-- them): a writer that leaves them out is refused. Its own migration: DuckDB cannot change a column's
-- constraints in the transaction that updated the table.
ALTER TABLE candidate_pairs ALTER COLUMN prompt_tokens SET NOT NULL;
ALTER TABLE candidate_pairs ALTER COLUMN response_a_tokens SET NOT NULL;
ALTER TABLE candidate_pairs ALTER COLUMN response_b_tokens SET NOT NULL;
