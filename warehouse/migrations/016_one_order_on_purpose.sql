-- Whether a judge run's strategy judges a pair in one order on purpose (the first verdict settled it), as the
-- strategy declares when the run starts: the curation reads this fact instead of matching strategy names.
-- Runs recorded before it existed get it from their strategy label: of the strategies so far, only
-- `adaptive[:K]` stops at one order on purpose.
ALTER TABLE judge_runs ADD COLUMN one_order_on_purpose BOOLEAN DEFAULT false;
UPDATE judge_runs SET one_order_on_purpose = strategy LIKE 'adaptive%';
