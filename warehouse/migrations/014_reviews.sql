-- Human review in Label Studio: the projects pairs are pushed to, each task's pair and how its sides were
-- shown, why each pair was selected (and what the judge said then, never shown to reviewers), every submitted
-- annotation with its earlier states, and each reviewed pair's outcome after majority.

CREATE TABLE review_projects (
    project_key       VARCHAR PRIMARY KEY,   -- <server url>#<Label Studio project id>
    url               VARCHAR NOT NULL,
    ls_project_id     INTEGER NOT NULL,
    title             VARCHAR NOT NULL,
    interface         VARCHAR NOT NULL,      -- hash of the labeling interface the project was made with
    created_at        TIMESTAMP NOT NULL
);

-- One task per (project, pair). A row is planned (ls_task_id NULL) before Label Studio is asked for the task,
-- so a push cut short is finished by the next one, never duplicated.
CREATE TABLE review_tasks (
    project_key       VARCHAR NOT NULL,
    pair_id           VARCHAR NOT NULL,
    ls_task_id        INTEGER,
    answer_1          VARCHAR NOT NULL,      -- a | b: the response of the pair shown as "Answer 1" (drawn at random)
    planned_at        TIMESTAMP NOT NULL,
    pushed_at         TIMESTAMP,
    PRIMARY KEY (project_key, pair_id)
);

CREATE TABLE review_selections (
    project_key       VARCHAR NOT NULL,
    pair_id           VARCHAR NOT NULL,
    selection         VARCHAR NOT NULL,      -- borderline | disagreement | audit
    name              VARCHAR NOT NULL,      -- the dataset version the pair was drawn from
    version           INTEGER NOT NULL,
    judge_config_id   VARCHAR NOT NULL,
    judge_side        VARCHAR NOT NULL,      -- a | b | tie: the judge's direction when selected
    judge_margin      DOUBLE,                -- the judge's mean margin on A's side
    p_correct         DOUBLE,
    rank              INTEGER NOT NULL,      -- its place in the selection's order (audit: in the seeded sample)
    seed              INTEGER,               -- audit: the sample's seed
    selected_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (project_key, pair_id, selection)
);

-- Every push: which version, selection and limit (a pair already selected keeps its first selection's row above).
CREATE TABLE review_pushes (
    project_key       VARCHAR NOT NULL,
    name              VARCHAR NOT NULL,
    version           INTEGER NOT NULL,
    selection         VARCHAR NOT NULL,
    "limit"           INTEGER NOT NULL,
    seed              INTEGER,
    selected          INTEGER NOT NULL,
    new_tasks         INTEGER NOT NULL,
    pushed_at         TIMESTAMP NOT NULL
);

-- Every submitted annotation, as last pulled. Its earlier states move to human_review_history.
CREATE TABLE human_reviews (
    project_key       VARCHAR NOT NULL,
    annotation_id     INTEGER NOT NULL,
    server            VARCHAR NOT NULL,      -- the Label Studio URL: annotator ids are per server
    ls_task_id        INTEGER NOT NULL,
    pair_id           VARCHAR NOT NULL,
    choice            VARCHAR NOT NULL,      -- answer_1 | answer_2 | tie | both_bad, as the reviewer saw it
    side              VARCHAR NOT NULL,      -- a | b | tie | both_bad: the choice mapped onto the pair
    annotator_id      INTEGER NOT NULL,
    annotator         VARCHAR,               -- the reviewer's e-mail on that server
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    lead_time_s       DOUBLE,
    revision          INTEGER NOT NULL,      -- 1, then one more each time Label Studio's copy changed
    pulled_at         TIMESTAMP NOT NULL,
    PRIMARY KEY (project_key, annotation_id)
);

CREATE TABLE human_review_history (
    project_key       VARCHAR NOT NULL,
    annotation_id     INTEGER NOT NULL,
    server            VARCHAR NOT NULL,
    ls_task_id        INTEGER NOT NULL,
    pair_id           VARCHAR NOT NULL,
    choice            VARCHAR NOT NULL,
    side              VARCHAR NOT NULL,
    annotator_id      INTEGER NOT NULL,
    annotator         VARCHAR,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    lead_time_s       DOUBLE,
    revision          INTEGER NOT NULL,
    pulled_at         TIMESTAMP NOT NULL,
    superseded_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (project_key, annotation_id, revision)
);

-- Each reviewed pair after majority over its reviewers' latest choices (rewritten by every pull that changes
-- an annotation).
CREATE TABLE review_outcomes (
    pair_id           VARCHAR PRIMARY KEY,
    outcome           VARCHAR NOT NULL,      -- a | b | tie | both_bad | split (no strict majority)
    reviewers         INTEGER NOT NULL,
    votes_a           INTEGER NOT NULL,
    votes_b           INTEGER NOT NULL,
    votes_tie         INTEGER NOT NULL,
    votes_both_bad    INTEGER NOT NULL,
    resolved_at       TIMESTAMP NOT NULL
);

-- Review progress per project, for the dashboard: tasks pushed and annotated, and how often the reviewers'
-- outcome agrees with the judge's direction at selection time, per selection (audit: an unbiased sample).
CREATE OR REPLACE VIEW dash_review_progress AS
WITH annotated AS (
    SELECT project_key, count(DISTINCT ls_task_id) AS tasks, count(*) AS annotations,
           count(DISTINCT annotator_id) AS reviewers, median(lead_time_s) AS median_lead_time_s
    FROM human_reviews GROUP BY project_key),
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
       coalesce(di.judge_agrees, 0) AS disagreement_judge_agrees
FROM review_projects p
LEFT JOIN pushed pu USING (project_key)
LEFT JOIN annotated a USING (project_key)
LEFT JOIN chosen au ON au.project_key = p.project_key AND au.selection = 'audit'
LEFT JOIN chosen bo ON bo.project_key = p.project_key AND bo.selection = 'borderline'
LEFT JOIN chosen di ON di.project_key = p.project_key AND di.selection = 'disagreement'
ORDER BY p.created_at;
