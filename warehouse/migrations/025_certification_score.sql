-- The score that certified a row of a certified version (`tasks.curate.certification`: a model's probability that
-- the judge matches a person, fitted on the training labels; not the judge's `p_correct`). NULL in any other
-- version, whose rows digest as before.
ALTER TABLE dataset_rows ADD COLUMN certification_score DOUBLE;
