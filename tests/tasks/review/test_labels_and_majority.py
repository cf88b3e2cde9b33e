"""A reviewer's choice on a task's sides back onto the pair; several reviewers by majority; what a pull changes."""

from datetime import datetime

import pyarrow as pa
import pytest

from common.reasons import ReviewReject
from tasks.review.interface import LABEL_CONFIG, is_ours
from tasks.review.labels import NotAReview, changes, choice_of, human_label_of, review_rows, side_of
from tasks.review.majority import majority, resolve
from tasks.review.tasks import draw_answer_1, task_data, texts_digest


def _result(choice):
    return [{"from_name": "preference", "to_name": "answer_1", "type": "choices", "value": {"choices": [choice]}}]


def test_choices_map_onto_the_pair_through_the_task_s_order():
    assert [side_of(choice_of(_result(c)), "a") for c in ("Answer 1", "Answer 2", "Tie", "Both bad")] == \
        ["a", "b", "tie", "both_bad"]
    assert [side_of(choice_of(_result(c)), "b") for c in ("Answer 1", "Answer 2")] == ["b", "a"]
    for result, reason in ((_result("Maybe"), ReviewReject.CHOICE_UNKNOWN), ([], ReviewReject.NO_CHOICE),
                           (None, ReviewReject.ANNOTATION_MALFORMED)):
        with pytest.raises(NotAReview) as no:
            choice_of(result)
        assert no.value.reason == reason
    with pytest.raises(ValueError):
        side_of("answer_1", "c")


def test_a_reviewer_s_pick_is_the_weakest_clear_label_of_the_source():
    from tasks.ingest.sources import known_facts

    facts = known_facts()
    assert human_label_of("a", "helpsteer3", facts) == (2.0, False) and human_label_of("b", "arena", facts) == (-1.0, False)
    assert human_label_of("both_bad", "arena", facts) == (0.0, True)
    assert human_label_of("split", "arena", facts) == (None, False)


def test_the_clear_label_is_read_from_the_facts_passed_in():
    """The warehouse's facts of the pair's source, not this build's registry: a source it does not know (another
    host's) reads as stored, and one nobody stated facts for is one step of the scale."""
    from tasks.ingest.source_facts import DEFAULT_CLEAR_LABEL, SourceFacts

    facts = {"made-up": SourceFacts("made-up", clear_label=1.5)}
    assert human_label_of("a", "made-up", facts) == (1.5, False) and human_label_of("b", "made-up", facts) == (-1.5, False)
    assert human_label_of("a", "unknown-source", facts) == (DEFAULT_CLEAR_LABEL, False)
    assert human_label_of("a", "helpsteer3", facts) == (DEFAULT_CLEAR_LABEL, False)  # not the registry's 2


def test_a_task_shows_both_answers_in_its_order_and_nothing_of_the_judge():
    pair = {"pair_id": "p1", "history": [{"role": "user", "content": "q"}], "response_a": "A", "response_b": "B"}
    first, second = task_data(pair, "a"), task_data(pair, "b")
    assert (first["answer_1"], first["answer_2"], second["answer_1"], second["answer_2"]) == ("A", "B", "B", "A")
    assert set(first) == {"conversation", "answer_1", "answer_2", "pair_id"}
    assert texts_digest(first) != texts_digest(second) and texts_digest(first) == texts_digest(dict(first))
    drawn = draw_answer_1(200)
    assert set(drawn) == {"a", "b"} and 60 < drawn.count("a") < 140


def test_the_interface_check_ignores_layout_but_not_a_changed_choice():
    assert is_ours(LABEL_CONFIG) and is_ours(LABEL_CONFIG.replace("\n  ", "\n      "))
    assert not is_ours(LABEL_CONFIG.replace('"Both bad"', '"Both poor"')) and not is_ours("")


def test_review_rows_keep_submitted_choices_only():
    t = "2026-01-02T03:04:05.123456Z"
    tasks = [{"id": 1, "annotations": [
        {"id": 10, "completed_by": 7, "updated_by": 7, "result": _result("Answer 2"), "created_at": t,
         "updated_at": t, "lead_time": 4.5},
        {"id": 11, "completed_by": {"id": 8}, "updated_by": 8, "result": [], "was_cancelled": True, "created_at": t},
        {"id": 12, "completed_by": 9, "updated_by": 9, "result": [], "created_at": t}]}]
    rows, rejected = review_rows("k", "http://ls", tasks, {1: ("p1", "b")}, {7: "r7@example.com"})
    assert [(r["annotation_id"], r["reason"]) for r in rejected] == [(11, ReviewReject.SKIPPED),
                                                                     (12, ReviewReject.NO_CHOICE)]
    (row,) = rows
    assert (row["pair_id"], row["choice"], row["side"], row["annotator"], row["lead_time_s"]) == \
        ("p1", "answer_2", "a", "r7@example.com", 4.5)
    assert row["updated_at"] == datetime(2026, 1, 2, 3, 4, 5, 123456)


def test_changes_tell_new_changed_and_unchanged_apart():
    base = {"annotation_id": 1, "choice": "answer_1", "side": "a", "updated_at": datetime(2026, 1, 1),
            "lead_time_s": 3.0, "annotator_id": 7}
    base = {**base, "ls_task_id": 5, "pair_id": "p"}
    first = changes([base], {})
    assert (len(first.new), first.new[0]["revision"], first.changed, first.unchanged) == (1, 1, [], 0)
    again = changes([base], {1: {**base, "revision": 1}})
    assert (again.new, again.changed, again.unchanged) == ([], [], 1)
    later = {**base, "choice": "tie", "side": "tie", "updated_at": datetime(2026, 1, 2)}
    moved = changes([later], {1: {**base, "revision": 2}})
    assert moved.new == [] and moved.changed[0]["revision"] == 3 and (moved.unchanged, moved.updated) == (0, 1)


def test_majority_needs_strictly_more_votes_than_any_other_choice():
    assert majority(["a"]) == "a" and majority(["a", "a", "b"]) == "a"
    assert majority(["tie", "both_bad", "both_bad"]) == "both_bad"
    assert majority(["a", "b"]) == "split" and majority(["a", "b", "tie"]) == "split"
    with pytest.raises(ValueError):
        majority([])


def test_each_reviewer_counts_once_with_their_latest_choice():
    d = [datetime(2026, 1, k) for k in (1, 2, 3)]
    votes = pa.table({"pair_id": ["p", "p", "p", "q", "q"], "reviewer": ["s#1", "s#1", "s#2", "s#1", "t#1"],
                      "side": ["b", "a", "a", "a", "b"], "updated_at": [d[0], d[2], d[1], d[0], d[0]]})
    out = {r["pair_id"]: r for r in resolve(votes).to_pylist()}
    assert (out["p"]["outcome"], out["p"]["reviewers"], out["p"]["votes_a"], out["p"]["votes_b"]) == ("a", 2, 2, 0)
    assert (out["q"]["outcome"], out["q"]["reviewers"]) == ("split", 2)  # reviewer 1 of two servers: two people
