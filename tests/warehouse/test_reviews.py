"""The review tables: tasks planned then pushed (never twice), annotations landed with their history, outcomes
resolved again on every change, the fingerprint versions see, and the dashboard's progress view."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa

from tasks.review.majority import resolve
from warehouse.store import Warehouse

SERVER = "org 1 created 2026-01-01T00:00:00.000001Z"
KEY = f"{SERVER}#1"


def _push(selected: int, new_tasks: int) -> dict:
    return {"name": "d", "version": 1, "selection": "audit", "limit": 5, "seed": 0, "selected": selected,
            "new_tasks": new_tasks}


def _selections(pairs: list[str], selection: str, judge_side: str = "a") -> pa.Table:
    n = len(pairs)
    return pa.table({"pair_id": pairs, "selection": [selection] * n, "name": ["d"] * n, "version": [1] * n,
                     "judge_config_id": ["c"] * n, "judge_side": [judge_side] * n, "judge_margin": [1.0] * n,
                     "p_correct": [0.6] * n, "rank": list(range(n)), "seed": [None] * n})


def _review(annotation: int, task: int, pair: str, side: str, annotator: int, day: int) -> dict:
    at = datetime(2026, 1, day)
    return {"project_key": KEY, "annotation_id": annotation, "server": SERVER, "ls_task_id": task,
            "pair_id": pair, "choice": {"a": "answer_1", "b": "answer_2"}.get(side, side), "side": side,
            "annotator_id": annotator, "annotator": f"r{annotator}@x", "created_at": at, "updated_at": at,
            "lead_time_s": 10.0, "revision": 1}


def _tasks(wh) -> dict:
    return {t["pair_id"]: (t["ls_task_id"], t["answer_1"], t["texts_digest"]) for t in wh.reviews.review_tasks_of(KEY)}


def test_tasks_are_planned_then_pushed_and_never_twice(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        wh.reviews.save_review_project(KEY, "http://ls", 1, "d review", "iface", SERVER)
        assert not wh.reviews.review_version_pushed("d", 1)
        wh.reviews.plan_review(KEY, pa.table({"pair_id": ["p1", "p2"], "answer_1": ["a", "b"]}),
                       _selections(["p1", "p2"], "audit"), _push(2, 2))
        wh.reviews.plan_review(KEY, pa.table({"pair_id": pa.array([], pa.string()), "answer_1": pa.array([], pa.string())}),
                       _selections(["p1", "p2"], "audit"), _push(2, 0))  # the same selection again: nothing doubles
        assert wh.reviews.review_version_pushed("d", 1) and not wh.reviews.review_version_pushed("d", 2)
        assert wh.reviews.planned_review_tasks(KEY) == [{"pair_id": "p1", "answer_1": "a"}, {"pair_id": "p2", "answer_1": "b"}]
        wh.reviews.record_pushed_tasks(KEY, [("p1", 11, "d1")])
        assert wh.reviews.review_task_counts(KEY) == (1, 1) and _tasks(wh) == {"p1": (11, "a", "d1"),
                                                                            "p2": (None, "b", None)}
        # the planned task's id found later is recorded; a pair not planned here, or a recorded one, is not
        wh.reviews.record_pushed_tasks(KEY, [("p2", 12, "d2"), ("p3", 13, "d3"), ("p1", 99, "dx")])
        assert _tasks(wh) == {"p1": (11, "a", "d1"), "p2": (12, "b", "d2")}
        state = wh.reviews.review_state(KEY)
        assert state["tasks"] == {"p1", "p2"} and state["selected:audit"] == {"p1", "p2"}
        assert wh.query("SELECT count(*) FROM review_selections")[0][0] == 2


def test_annotations_land_with_history_and_outcomes_follow(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        wh.reviews.save_review_project(KEY, "http://ls", 1, "d review", "iface", SERVER)
        wh.reviews.plan_review(KEY, pa.table({"pair_id": ["p1", "p2"], "answer_1": ["a", "b"]}),
                       _selections(["p1", "p2"], "audit", judge_side="a"), _push(2, 2))
        wh.reviews.record_pushed_tasks(KEY, [("p1", 11, "d1"), ("p2", 12, "d2")])
        assert wh.reviews.review_inputs() == ""
        wh.reviews.land_reviews([_review(1, 11, "p1", "a", 7, 1), _review(2, 11, "p1", "b", 8, 1),
                         _review(3, 12, "p2", "b", 7, 1)], [], resolve)
        outcomes = dict(wh.query("SELECT pair_id, outcome FROM review_outcomes"))
        assert outcomes == {"p1": "split", "p2": "b"}
        first = wh.reviews.review_inputs()
        assert first.startswith("/reviews:2:") and wh.versions.version_inputs("c").endswith(first)
        (progress,) = wh.reviews.review_progress()
        counts = (progress["pushed"], progress["annotated"], progress["annotations"], progress["reviewers"])
        assert counts == (2, 2, 3, 2)
        assert (progress["audit_selected"], progress["audit_decided"], progress["audit_judge_agrees"]) == (2, 1, 0)
        # reviewer 8 changes their mind in Label Studio: the row is updated, its earlier state kept
        wh.reviews.land_reviews([], [{**_review(2, 11, "p1", "a", 8, 2), "revision": 2}], resolve)
        assert wh.query("SELECT side, revision FROM human_reviews WHERE annotation_id = 2") == [("a", 2)]
        assert wh.query("SELECT side, revision FROM human_review_history WHERE annotation_id = 2") == [("b", 1)]
        assert dict(wh.query("SELECT pair_id, outcome FROM review_outcomes")) == {"p1": "a", "p2": "b"}
        assert wh.reviews.review_inputs() != first and wh.reviews.review_history_count(KEY) == 1
        (progress,) = wh.reviews.review_progress()
        assert (progress["audit_decided"], progress["audit_judge_agrees"]) == (2, 1)


def test_a_withdrawn_review_stays_with_its_history_counts_for_nothing_and_changes_the_inputs(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        wh.reviews.save_review_project(KEY, "http://ls", 1, "d review", "iface", SERVER)
        wh.reviews.plan_review(KEY, pa.table({"pair_id": ["p1"], "answer_1": ["a"]}), _selections(["p1"], "audit"),
                               _push(1, 1))
        wh.reviews.record_pushed_tasks(KEY, [("p1", 11, "d1")])
        wh.reviews.land_reviews([_review(1, 11, "p1", "a", 7, 1), _review(2, 11, "p1", "a", 8, 1)], [], resolve)
        assert wh.query("SELECT outcome, reviewers FROM review_outcomes") == [("a", 2)]
        counted = wh.reviews.review_inputs()
        withdrawn = {**_review(2, 11, "p1", "a", 8, 1), "revision": 2, "withdrawn_reason": "annotation_deleted"}
        wh.reviews.land_reviews([], [withdrawn], resolve)
        assert wh.query("SELECT outcome, reviewers FROM review_outcomes") == [("a", 1)]
        assert wh.reviews.review_inputs() != counted
        (row,) = wh.query("SELECT revision, withdrawn_reason, withdrawn_at IS NOT NULL FROM human_reviews "
                          "WHERE annotation_id = 2")
        assert row == (2, "annotation_deleted", True)
        assert wh.query("SELECT revision, withdrawn_at FROM human_review_history WHERE annotation_id = 2") == [(1, None)]
        (progress,) = wh.reviews.review_progress()
        assert (progress["annotations"], progress["withdrawn"], progress["server_id"]) == (1, 1, SERVER)
        assert wh.reviews.review_state(KEY)["reviewed"] == {"p1"}
        # the last review withdrawn too: no outcome left, and the inputs are not those of a warehouse never reviewed
        before = wh.reviews.review_inputs()
        last = {**_review(1, 11, "p1", "a", 7, 1), "revision": 2, "withdrawn_reason": "task_deleted"}
        wh.reviews.land_reviews([], [last], resolve)
        assert wh.query("SELECT count(*) FROM review_outcomes") == [(0,)]
        assert wh.reviews.review_inputs() not in ("", before) and wh.reviews.review_state(KEY)["reviewed"] == set()


def test_a_project_is_known_by_its_server_whatever_url_reached_it(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        legacy = "http://127.0.0.1:8080#3"  # recorded before servers had identities: by its URL
        wh.con.execute("INSERT INTO review_projects (project_key, url, ls_project_id, title, interface, created_at) "
                       "VALUES (?, 'http://127.0.0.1:8080', 3, 't', 'i', now())", [legacy])
        wh.reviews.land_reviews([{**_review(1, 11, "p1", "a", 7, 1), "project_key": legacy,
                                  "server": "http://127.0.0.1:8080"}], [], resolve)
        assert wh.reviews.review_project_key(SERVER, "http://localhost:8080", 3) is None  # not yet told apart
        assert wh.reviews.review_project_key(SERVER, "http://127.0.0.1:8080", 3) == legacy
        wh.reviews.save_review_project(legacy, "http://127.0.0.1:8080", 3, "t", "i", SERVER)
        assert wh.reviews.review_project_key(SERVER, "http://localhost:8080", 3) == legacy
        assert wh.query("SELECT server FROM human_reviews") == [(SERVER,)]  # its reviewers are the server's
        assert wh.reviews.review_project_key("org 1 created another time", "http://127.0.0.1:8080", 3) is None
        (known,) = wh.reviews.review_projects_on(SERVER, "http://localhost:8080")
        assert known["project_key"] == legacy and known["task_ids"] == set()


def test_counting_tasks_leaves_no_result_open_for_what_follows(warehouse_path):
    """The counts read with a query of one row, then an Arrow table registered on the same connection (a
    reconcile after a push cut short): DuckDB refuses to register beside a result not read to its end."""
    with Warehouse(warehouse_path) as wh:
        wh.reviews.save_review_project(KEY, "http://ls", 1, "d review", "iface", SERVER)
        wh.reviews.plan_review(KEY, pa.table({"pair_id": ["p1"], "answer_1": ["a"]}), _selections(["p1"], "audit"),
                               _push(1, 1))
        assert wh.reviews.review_task_counts(KEY) == (0, 1)
        assert wh.reviews.review_version_pushed("d", 1)
        wh.reviews.record_pushed_tasks(KEY, [("p1", 11, "d1")])
        wh.con.execute("SELECT count(*) FROM review_tasks").fetchone()  # any part's one-row read
        assert wh.reviews.review_pair_texts(["nope"]) == []
        assert wh.reviews.review_task_counts(KEY) == (1, 0)
