-- A row that reviewers decided says so: how many reviewers voted and the side of the pair their majority chose
-- (`a` | `b`); both NULL for a row the judge decided, and for every row of a version built before this column.
-- A row's digest reads them only where they are set, so the digests (and content hashes) of versions without
-- reviewed rows are what they were.
ALTER TABLE dataset_rows ADD COLUMN reviewers INTEGER;
ALTER TABLE dataset_rows ADD COLUMN reviewers_choice VARCHAR;
