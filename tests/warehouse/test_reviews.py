"""The review tables: tasks planned then pushed (never twice), annotations landed with their history, outcomes
resolved again on every change, the fingerprint versions see, and the dashboard's progress view."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa

from tasks.review.majority import resolve
from warehouse.store import Warehouse

KEY = "http://ls#1"


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
    return {"project_key": KEY, "annotation_id": annotation, "server": "http://ls", "ls_task_id": task,
            "pair_id": pair, "choice": {"a": "answer_1", "b": "answer_2"}.get(side, side), "side": side,
            "annotator_id": annotator, "annotator": f"r{annotator}@x", "created_at": at, "updated_at": at,
            "lead_time_s": 10.0, "revision": 1}


def test_tasks_are_planned_then_pushed_and_never_twice(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        wh.reviews.save_review_project(KEY, "http://ls", 1, "d review", "iface")
        assert not wh.reviews.review_version_pushed("d", 1)
        wh.reviews.plan_review(KEY, pa.table({"pair_id": ["p1", "p2"], "answer_1": ["a", "b"]}),
                       _selections(["p1", "p2"], "audit"), _push(2, 2))
        wh.reviews.plan_review(KEY, pa.table({"pair_id": pa.array([], pa.string()), "answer_1": pa.array([], pa.string())}),
                       _selections(["p1", "p2"], "audit"), _push(2, 0))  # the same selection again: nothing doubles
        assert wh.reviews.review_version_pushed("d", 1) and not wh.reviews.review_version_pushed("d", 2)
        assert wh.reviews.planned_review_tasks(KEY) == [{"pair_id": "p1", "answer_1": "a"}, {"pair_id": "p2", "answer_1": "b"}]
        wh.reviews.record_pushed_tasks(KEY, [("p1", 11, "a")])
        assert wh.reviews.review_task_counts(KEY) == (1, 1) and wh.reviews.review_task_map(KEY) == {11: ("p1", "a")}
        # a task Label Studio holds that the warehouse lost track of: adopted with the side its texts show
        wh.reviews.record_pushed_tasks(KEY, [("p2", 12, "a"), ("p3", 13, "b"), ("p1", 99, "b")])
        assert wh.reviews.review_task_map(KEY) == {11: ("p1", "a"), 12: ("p2", "a"), 13: ("p3", "b")}
        state = wh.reviews.review_state(KEY)
        assert state["tasks"] == {"p1", "p2", "p3"} and state["selected:audit"] == {"p1", "p2"}
        assert wh.query("SELECT count(*) FROM review_selections")[0][0] == 2


def test_annotations_land_with_history_and_outcomes_follow(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        wh.reviews.save_review_project(KEY, "http://ls", 1, "d review", "iface")
        wh.reviews.plan_review(KEY, pa.table({"pair_id": ["p1", "p2"], "answer_1": ["a", "b"]}),
                       _selections(["p1", "p2"], "audit", judge_side="a"), _push(2, 2))
        wh.reviews.record_pushed_tasks(KEY, [("p1", 11, "a"), ("p2", 12, "b")])
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
