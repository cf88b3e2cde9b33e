"""What a pull believes of Label Studio, as pure functions: an annotation of any shape Label Studio stores is a
review or one rejection with its reason; the reviewer is the poster Label Studio recorded; a task's texts are
checked by digest; only planned tasks are adopted; a review whose task or annotation is gone is withdrawn."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from common.reasons import ReviewReject, lookup
from tasks.review.labels import NotAReview, changes, read_annotation, review_rows, withdrawals
from tasks.review.tasks import sort_unrecorded, task_data, texts_digest

T = "2026-01-02T03:04:05.123456Z"
PAIR = {"pair_id": "p1", "history": [{"role": "user", "content": "q?"}], "response_a": "A text", "response_b": "B text"}


def _choice(value) -> list[dict]:
    return [{"from_name": "preference", "to_name": "answer_1", "type": "choices", "value": value}]


def _annotation(**fields) -> dict:
    return {"id": 10, "completed_by": 7, "updated_by": 7, "result": _choice({"choices": ["Answer 1"]}),
            "created_at": T, "updated_at": T, "lead_time": 4.5, **fields}


def _reason(a) -> str:
    with pytest.raises(NotAReview) as no:
        read_annotation(a)
    assert lookup(no.value.reason, ReviewReject) is not None  # every reason given is a registered one
    return no.value.reason


@pytest.mark.parametrize("fields, reason", [
    ({"result": _choice(["Answer 1"])}, ReviewReject.ANNOTATION_MALFORMED),  # value a list (stored despite a 500)
    ({"result": _choice("Answer 1")}, ReviewReject.ANNOTATION_MALFORMED),  # value a string (likewise)
    ({"result": _choice({"choices": [{"x": 1}]})}, ReviewReject.ANNOTATION_MALFORMED),
    ({"result": _choice({"choices": "Answer 1"})}, ReviewReject.ANNOTATION_MALFORMED),
    ({"result": _choice(None)}, ReviewReject.ANNOTATION_MALFORMED),
    ({"result": "Answer 1"}, ReviewReject.ANNOTATION_MALFORMED),
    ({"result": {"choices": ["Answer 1"]}}, ReviewReject.ANNOTATION_MALFORMED),
    ({"result": [None]}, ReviewReject.ANNOTATION_MALFORMED),
    ({"result": [{"from_name": "preference", "type": "textarea", "value": {"text": ["Answer 1"]}}]},
     ReviewReject.ANNOTATION_MALFORMED),
    ({"result": None}, ReviewReject.ANNOTATION_MALFORMED),
    ({"result": []}, ReviewReject.NO_CHOICE),
    ({"result": [{"from_name": "other", "type": "choices", "value": {"choices": ["Answer 1"]}}]},
     ReviewReject.NO_CHOICE),
    ({"result": _choice({"choices": []})}, ReviewReject.NO_CHOICE),
    ({"result": _choice({"choices": ["Maybe"]})}, ReviewReject.CHOICE_UNKNOWN),
    ({"result": _choice({"choices": ["Answer 1", "Answer 2"]})}, ReviewReject.CHOICE_UNKNOWN),
    ({"result": _choice({"choices": ["Answer 1"]}) * 2}, ReviewReject.CHOICE_UNKNOWN),
    ({"was_cancelled": True}, ReviewReject.SKIPPED),
    ({"completed_by": None, "updated_by": None}, ReviewReject.ANNOTATOR_UNKNOWN),  # a deleted user
    ({"updated_by": True}, ReviewReject.ANNOTATOR_UNKNOWN),
    ({"updated_by": "7"}, ReviewReject.ANNOTATOR_UNKNOWN),
    ({"id": None}, ReviewReject.ANNOTATION_MALFORMED),
    ({"id": True}, ReviewReject.ANNOTATION_MALFORMED),
    ({"id": "10"}, ReviewReject.ANNOTATION_MALFORMED),
    ({"created_at": None}, ReviewReject.ANNOTATION_MALFORMED),
    ({"created_at": "yesterday"}, ReviewReject.ANNOTATION_MALFORMED),
    ({"created_at": 17}, ReviewReject.ANNOTATION_MALFORMED),
    ({"updated_at": ["x"]}, ReviewReject.ANNOTATION_MALFORMED),
])
def test_an_annotation_of_any_shape_is_one_rejection_with_its_reason(fields, reason):
    assert _reason(_annotation(**fields)) == reason


@pytest.mark.parametrize("junk", [None, 3, "annotation", ["id", 10]])
def test_an_annotation_that_is_no_object_is_malformed(junk):
    assert _reason(junk) == ReviewReject.ANNOTATION_MALFORMED


def test_the_reviewer_is_the_poster_label_studio_recorded_not_the_completed_by_it_shows():
    forged = read_annotation(_annotation(completed_by=8, updated_by=7))
    assert (forged["annotator_id"], forged["claimed_annotator_id"]) == (7, 8)
    gone = read_annotation(_annotation(completed_by=None, updated_by=7))  # the claimed user deleted since
    assert (gone["annotator_id"], gone["claimed_annotator_id"]) == (7, None)
    expanded = read_annotation(_annotation(completed_by={"id": 9, "email": "x@example.com"}))
    assert (expanded["annotator_id"], expanded["claimed_annotator_id"]) == (7, 9)


def test_a_lead_time_that_is_no_duration_is_left_out_not_the_review():
    for lead in (float("nan"), float("inf"), -3.0, "12", True, None):
        assert read_annotation(_annotation(lead_time=lead))["lead_time_s"] is None
    review = read_annotation(_annotation(updated_at=None, lead_time=0))
    assert review["lead_time_s"] == 0.0 and review["updated_at"] == review["created_at"] == datetime(
        2026, 1, 2, 3, 4, 5, 123456)


def test_one_bad_annotation_is_rejected_and_the_others_of_its_task_go_on():
    tasks = [{"id": 1, "annotations": [
        _annotation(id=10), _annotation(id=11, result=_choice(["Answer 1"])), "junk",
        _annotation(id=12, completed_by=None, updated_by=None), _annotation(id=13, updated_by=9, completed_by=7,
                                                                            result=_choice({"choices": ["Tie"]}))]},
        {"id": 2, "annotations": "not a list"}]
    rows, rejected = review_rows("k", "server", tasks, {1: ("p1", "b"), 2: ("p2", "a")}, {7: "r7@x", 9: "r9@x"})
    assert [(r["annotation_id"], r["side"], r["annotator"]) for r in rows] == [(10, "b", "r7@x"), (13, "tie", "r9@x")]
    assert [(r["annotation_id"], r["reason"]) for r in rejected] == [
        (11, ReviewReject.ANNOTATION_MALFORMED), (None, ReviewReject.ANNOTATION_MALFORMED),
        (12, ReviewReject.ANNOTATOR_UNKNOWN)]
    assert all(r["ls_task_id"] == 1 for r in rejected)


def test_the_digest_sees_every_text_a_reviewer_reads_and_nothing_else():
    pushed = task_data(PAIR, "a")
    digest = texts_digest(pushed)
    assert texts_digest({**pushed, "extra": "not shown"}) == digest
    assert texts_digest(dict(reversed(list(pushed.items())))) == digest
    swapped = {**pushed, "answer_1": pushed["answer_2"], "answer_2": pushed["answer_1"]}
    assert texts_digest(swapped) != digest and texts_digest(task_data(PAIR, "b")) == texts_digest(swapped)
    for edit in ({"answer_1": "A text "}, {"conversation": [{"role": "user", "content": "other"}]},
                 {"pair_id": "p2"}, {"answer_2": None}):
        assert texts_digest({**pushed, **edit}) != digest, edit
    assert texts_digest({k: v for k, v in pushed.items() if k != "answer_2"}) != digest
    assert texts_digest(None) is None and texts_digest(["answer_1"]) is None


def test_only_a_task_planned_here_with_the_planned_texts_is_adopted():
    planned = {"p1": texts_digest(task_data(PAIR, "a")), "p9": "digest-of-another"}
    ours = {"id": 30, "data": task_data(PAIR, "a")}
    copy = {"id": 31, "data": task_data(PAIR, "a")}  # imported after ours by someone else: a later id
    flipped = {"id": 29, "data": task_data(PAIR, "b")}  # the pair's texts in the other order: not what was planned
    unplanned = {"id": 32, "data": {**task_data(PAIR, "a"), "pair_id": "p2"}}
    recorded_copy = {"id": 33, "data": task_data(PAIR, "a")}
    odd = [{"id": None, "data": task_data(PAIR, "a")}, {"id": "34", "data": {}}, "junk", {"id": 35, "data": "x"},
           {"id": 36}]
    adopt, foreign = sort_unrecorded([copy, unplanned, ours, flipped, {"id": 20, "data": {}}, *odd, recorded_copy],
                                     {20}, planned)
    assert adopt == [("p1", 30)]
    assert [t["id"] if isinstance(t, dict) else t for t in foreign[:4]] == [29, 31, 32, 33]
    assert len(foreign) == 4 + len(odd)  # everything else left alone, reported
    assert sort_unrecorded([ours], {30}, planned) == ([], [])  # recorded: neither adopted again nor foreign


def _known(aid: int, task: int, withdrawn: bool = False) -> dict:
    at = datetime(2026, 1, 1)
    return {"annotation_id": aid, "ls_task_id": task, "pair_id": f"p{task}", "choice": "answer_1", "side": "a",
            "annotator_id": 7, "updated_at": at, "lead_time_s": 1.0, "revision": 1,
            "withdrawn_at": at if withdrawn else None, "withdrawn_reason": "task_deleted" if withdrawn else None}


def test_a_review_whose_task_or_annotation_is_gone_or_rejected_now_is_withdrawn():
    known = {1: _known(1, 10), 2: _known(2, 11), 3: _known(3, 12), 4: _known(4, 13), 5: _known(5, 14, withdrawn=True),
             6: _known(6, 12)}
    listed = {11: {99}, 12: {3, 6}}  # task 11 lost annotation 2; task 13 was not listed (left as it is)
    out = withdrawals(known, listed, {10, 14}, {3: ReviewReject.TASK_TEXTS_CHANGED})
    assert out == {1: ReviewReject.TASK_DELETED, 2: ReviewReject.ANNOTATION_DELETED,
                   3: ReviewReject.TASK_TEXTS_CHANGED}
    change = changes([], known, out)
    assert change.withdrawn == {ReviewReject.TASK_DELETED: 1, ReviewReject.ANNOTATION_DELETED: 1,
                                ReviewReject.TASK_TEXTS_CHANGED: 1}
    assert {(r["annotation_id"], r["revision"], r["withdrawn_reason"]) for r in change.changed} == {
        (1, 2, "task_deleted"), (2, 2, "annotation_deleted"), (3, 2, "task_texts_changed")}
    assert all(r["withdrawn_at"] is None for r in change.changed)  # the warehouse stamps the time it lands them


def test_a_withdrawn_review_valid_again_is_reinstated_as_a_new_revision():
    known = {5: _known(5, 14, withdrawn=True)}
    pulled = {k: v for k, v in _known(5, 14).items() if not k.startswith("withdrawn")}
    change = changes([pulled], known)
    (row,) = change.changed
    assert change.reinstated == 1 and (row["revision"], row["withdrawn_at"], row["withdrawn_reason"]) == (2, None, None)
    assert math.isclose(row["lead_time_s"], 1.0)
