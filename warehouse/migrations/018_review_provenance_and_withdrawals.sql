-- What a pull checks Label Studio against: which server a project is on (by what the server says of itself, not
-- the URL it was reached at), a digest of the texts each task was pushed with, and reviews withdrawn (their
-- task or annotation deleted in Label Studio, its texts edited, the annotation no longer a valid review):
-- a withdrawn review stays, with why, and counts for nothing.

-- "org <id> created <time>": the organization the project belongs to, as Label Studio names it (its id and its
-- creation time); NULL for a project recorded before this migration, filled when it is next seen at its URL.
ALTER TABLE review_projects ADD COLUMN server_id VARCHAR;

-- blake2b of the texts the task shows (conversation, answer_1, answer_2, pair id) as pushed; NULL for a task
-- recorded before this migration, filled from the pair's texts when it is next pulled.
ALTER TABLE review_tasks ADD COLUMN texts_digest VARCHAR;
-- When a pull first found the task showing other texts: from then on none of its annotations counts, even if the
-- texts are put back (which annotation was made on which texts cannot be told).
ALTER TABLE review_tasks ADD COLUMN texts_changed_at TIMESTAMP;

-- The reviewer (annotator_id) is who Label Studio recorded as posting the annotation (its updated_by); what the
-- poster claimed (completed_by, which a client may set to anyone) is kept beside it.
ALTER TABLE human_reviews ADD COLUMN claimed_annotator_id INTEGER;
ALTER TABLE human_review_history ADD COLUMN claimed_annotator_id INTEGER;
ALTER TABLE human_reviews ADD COLUMN withdrawn_at TIMESTAMP;
ALTER TABLE human_reviews ADD COLUMN withdrawn_reason VARCHAR;   -- a ReviewReject reason (common/reasons.py)
ALTER TABLE human_review_history ADD COLUMN withdrawn_at TIMESTAMP;
ALTER TABLE human_review_history ADD COLUMN withdrawn_reason VARCHAR;

-- The dashboard's review progress counts the reviews that count (withdrawn ones apart).
CREATE OR REPLACE VIEW dash_review_progress AS
WITH annotated AS (
    SELECT project_key, count(DISTINCT ls_task_id) AS tasks, count(*) AS annotations,
           count(DISTINCT annotator_id) AS reviewers, median(lead_time_s) AS median_lead_time_s
    FROM human_reviews WHERE withdrawn_at IS NULL GROUP BY project_key),
withdrawn AS (
    SELECT project_key, count(*) AS withdrawn FROM human_reviews WHERE withdrawn_at IS NOT NULL
    GROUP BY project_key),
pushed AS (
    SELECT project_key, count(*) FILTER (WHERE ls_task_id IS NOT NULL) AS tasks,
           count(*) FILTER (WHERE ls_task_id IS NULL) AS planned
    FROM review_tasks GROUP BY project_key),
chosen AS (
    SELECT s.project_key, s.selection, count(*) AS selected,
           count(*) FILTER (WHERE o.outcome IN ('a', 'b') AND s.judge_side IN ('a', 'b')) AS decided,
           count(*) FILTER (WHERE o.outcome IN ('a', 'b') AND o.outcome = s.judge_side) AS judge_agrees
    FROM review_selections s LEFT JOIN review_outcomes o USING (pair_id)
    GROUP BY s.project_key, s.selection)
SELECT p.title AS project, p.url, p.ls_project_id,
       coalesce(pu.tasks, 0) AS pushed, coalesce(pu.planned, 0) AS not_yet_pushed,
       coalesce(a.tasks, 0) AS annotated, coalesce(a.annotations, 0) AS annotations,
       coalesce(a.reviewers, 0) AS reviewers, a.median_lead_time_s,
       coalesce(au.selected, 0) AS audit_selected, coalesce(au.decided, 0) AS audit_decided,
       coalesce(au.judge_agrees, 0) AS audit_judge_agrees,
       coalesce(bo.selected, 0) AS borderline_selected, coalesce(bo.decided, 0) AS borderline_decided,
       coalesce(bo.judge_agrees, 0) AS borderline_judge_agrees,
       coalesce(di.selected, 0) AS disagreement_selected, coalesce(di.decided, 0) AS disagreement_decided,
       coalesce(di.judge_agrees, 0) AS disagreement_judge_agrees,
       p.server_id, coalesce(w.withdrawn, 0) AS withdrawn
FROM review_projects p
LEFT JOIN pushed pu USING (project_key)
LEFT JOIN annotated a USING (project_key)
LEFT JOIN withdrawn w USING (project_key)
LEFT JOIN chosen au ON au.project_key = p.project_key AND au.selection = 'audit'
LEFT JOIN chosen bo ON bo.project_key = p.project_key AND bo.selection = 'borderline'
LEFT JOIN chosen di ON di.project_key = p.project_key AND di.selection = 'disagreement'
ORDER BY p.created_at;
