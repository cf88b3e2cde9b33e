"""A reviewer's annotation as a label on the pair.

A choice is made on the task's sides ("Answer 1", "Answer 2", "Tie", "Both bad"); the task's mapping (which
response was shown first) turns it into the pair's sides: "a", "b", "tie" or "both_bad". Only submitted
annotations count: a skipped task (Label Studio's `was_cancelled`), one without a choice or of a shape Label Studio
should not have stored, or one whose poster Label Studio no longer knows, is not a review: it is rejected with
its reason (`common.reasons.ReviewReject`), and the others go on.

On the human-label scale (from response A's side) a reviewer's pick is a clear preference without a strength:
it counts as the weakest clear label of the pair's source (the clear label its facts state, as the warehouse
stores them with its pairs), a tie as 0,
both-bad as a tie flagged both-bad (as a source's own both-bad votes are).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from common.reasons import ReviewReject
from tasks.ingest.source_facts import SourceFacts, facts_in
from tasks.review.interface import ANSWER_1, ANSWER_2, BOTH_BAD, CHOICE_VALUES, PREFERENCE, TIE

OUTCOMES = ("a", "b", TIE, BOTH_BAD)


class NotAReview(ValueError):
    """An annotation that is no review: its reason (`ReviewReject`) and what was found."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def is_id(value: Any) -> bool:
    """Whether Label Studio's value is a record id (an integer; true and false are not ids)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def choice_of(result: Any) -> str:
    """The reviewer's choice in an annotation's result: answer_1 | answer_2 | tie | both_bad. Anything else
    raises `NotAReview`: no choice of the preference control, a value the interface does not offer (or several),
    a result of another shape than Label Studio's (it stores some it answered 500 for)."""
    if not isinstance(result, list):
        raise NotAReview(ReviewReject.ANNOTATION_MALFORMED, f"result is {_kind(result)}, not a list")
    picked: list[str] = []
    for item in result:
        if not isinstance(item, dict):
            raise NotAReview(ReviewReject.ANNOTATION_MALFORMED, f"a result item is {_kind(item)}, not an object")
        if item.get("from_name") != PREFERENCE:
            continue
        value = item.get("value")
        if item.get("type") != "choices" or not isinstance(value, dict):
            raise NotAReview(ReviewReject.ANNOTATION_MALFORMED,
                             f"the preference item is of type {item.get('type')!r} with a value that is {_kind(value)}")
        choices = value.get("choices")
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise NotAReview(ReviewReject.ANNOTATION_MALFORMED, "the preference's choices are not a list of texts")
        picked += choices
    if not picked:
        raise NotAReview(ReviewReject.NO_CHOICE)
    if len(picked) != 1 or picked[0] not in CHOICE_VALUES:
        raise NotAReview(ReviewReject.CHOICE_UNKNOWN, repr(picked)[:80])
    return CHOICE_VALUES[picked[0]]


def side_of(choice: str, answer_1: str) -> str:
    """A choice on the task's sides as a side of the pair, given which response was "Answer 1"."""
    if answer_1 not in ("a", "b"):
        raise ValueError(f"answer_1 must be 'a' or 'b', not {answer_1!r}")
    if choice == ANSWER_1:
        return answer_1
    if choice == ANSWER_2:
        return "b" if answer_1 == "a" else "a"
    if choice in (TIE, BOTH_BAD):
        return choice
    raise ValueError(f"unknown choice {choice!r}")


def human_label_of(outcome: str, source: str, facts: Mapping[str, SourceFacts]) -> tuple[float | None, bool]:
    """(label on A's side, both-bad) for a reviewed outcome; (None, False) for a split. `facts`: each source's, as
    the warehouse stores them; a source it holds none for counts one step of the scale."""
    if outcome in ("a", "b"):
        clear = facts_in(facts, source).clear_label  # the weakest clear label of its scale, as the calibration counts
        return (clear if outcome == "a" else -clear), False
    if outcome in (TIE, BOTH_BAD):
        return 0.0, outcome == BOTH_BAD
    return None, False


def parse_time(text: str | None) -> datetime | None:
    """Label Studio's ISO times (UTC, "Z") as naive UTC, as the warehouse stores times."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc).replace(tzinfo=None)


def _time(value: Any, field: str) -> datetime | None:
    """A time of the annotation (None when absent); `NotAReview` when it is something else."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError:
            pass
    raise NotAReview(ReviewReject.ANNOTATION_MALFORMED, f"{field} is not a time ({str(value)[:40]!r})")


def read_annotation(a: Any) -> dict[str, Any]:
    """One of Label Studio's annotations as a review: its id, the choice, who posted it, its times and lead time;
    `NotAReview` when it is none. The reviewer is the user Label Studio itself recorded as the last to write the
    annotation (`updated_by`, set from the token that posted or changed it), not `completed_by`, which whoever
    posts may set to anyone; the claimed one is kept beside it."""
    if not isinstance(a, dict):
        raise NotAReview(ReviewReject.ANNOTATION_MALFORMED, f"the annotation is {_kind(a)}, not an object")
    if record_id(a) is None:
        raise NotAReview(ReviewReject.ANNOTATION_MALFORMED, f"its id is {a.get('id')!r}")
    if a.get("was_cancelled"):
        raise NotAReview(ReviewReject.SKIPPED)
    choice = choice_of(a.get("result"))
    poster = a.get("updated_by")
    if not is_id(poster):
        raise NotAReview(ReviewReject.ANNOTATOR_UNKNOWN, f"updated_by is {poster!r}")
    claimed = a.get("completed_by")
    claimed = claimed.get("id") if isinstance(claimed, dict) else claimed
    created = _time(a.get("created_at"), "created_at")
    if created is None:
        raise NotAReview(ReviewReject.ANNOTATION_MALFORMED, "it has no created_at")
    lead = a.get("lead_time")
    finite = isinstance(lead, (int, float)) and not isinstance(lead, bool) and math.isfinite(lead) and lead >= 0
    return {"annotation_id": a["id"], "choice": choice, "annotator_id": poster,
            "claimed_annotator_id": claimed if is_id(claimed) else None, "created_at": created,
            "updated_at": _time(a.get("updated_at"), "updated_at") or created,
            "lead_time_s": float(lead) if finite else None}


def record_id(record: Any) -> int | None:
    """The id of one of Label Studio's records (a task, an annotation), or None when it has none a record can
    have."""
    value = record.get("id") if isinstance(record, dict) else None
    return value if is_id(value) else None


def annotations_of(task: Any) -> list[Any]:
    """A listed task's annotations (none when it shows none as a list)."""
    annotations = task.get("annotations") if isinstance(task, dict) else None
    return annotations if isinstance(annotations, list) else []


def review_rows(project_key: str, server: str, tasks: list[dict[str, Any]], mapping: dict[int, tuple[str, str]],
                annotators: dict[int, str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The annotations of `tasks` (Label Studio's tasks this warehouse pushed, their texts checked; `mapping`: task
    id -> (pair id, answer_1)) as human_reviews rows, and those that are no review: (annotation id or None, task
    id, reason, detail), one each, the rest going on."""
    rows, rejected = [], []
    for task in tasks:
        pair_id, answer_1 = mapping[task["id"]]
        for a in annotations_of(task):
            try:
                review = read_annotation(a)
            except NotAReview as no:
                rejected.append({"annotation_id": record_id(a), "ls_task_id": task["id"], "reason": no.reason,
                                 "detail": no.detail})
                continue
            annotator = review["annotator_id"]
            rows.append({**review, "project_key": project_key, "server": server, "ls_task_id": task["id"],
                         "pair_id": pair_id, "side": side_of(review["choice"], answer_1),
                         "annotator": annotators.get(annotator)})
    return rows, rejected


def withdrawals(known: dict[int, dict[str, Any]], listed: dict[int, set[int]], deleted: set[int],
                rejected: dict[int, str]) -> dict[int, str]:
    """annotation id -> why, for the reviews landed earlier (`known`, not withdrawn yet) that no longer count: their
    task deleted in Label Studio, the annotation rejected now (`rejected`: id -> reason), or gone from its task
    (`listed`: task id -> the annotation ids it holds now). A review whose task was not listed is left as it is."""
    out = {}
    for aid, row in known.items():
        if row.get("withdrawn_at") is not None:
            continue
        task = row["ls_task_id"]
        if task in deleted:
            out[aid] = ReviewReject.TASK_DELETED
        elif aid in rejected:
            out[aid] = rejected[aid]
        elif task in listed and aid not in listed[task]:
            out[aid] = ReviewReject.ANNOTATION_DELETED
    return out


CHANGE_FIELDS = ("choice", "side", "updated_at", "lead_time_s", "annotator_id", "ls_task_id", "pair_id")


@dataclass
class Changes:
    """What a pull changes: new rows, changed rows (each with its next revision; withdrawn and reinstated ones
    among them), and counts."""

    new: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0
    updated: int = 0
    reinstated: int = 0
    withdrawn: dict[str, int] = field(default_factory=dict)  # reason -> reviews withdrawn now


def changes(pulled: list[dict[str, Any]], known: dict[int, dict[str, Any]], withdraw: dict[int, str] | None = None,
            at: datetime | None = None) -> Changes:
    """An annotation Label Studio changed since the last pull (its choice, poster, time or lead time) replaces its
    row, the earlier state kept as history; one of `withdraw` (id -> reason) is withdrawn at `at` the same way (it
    stays, and counts for nothing); a withdrawn one valid again is reinstated."""
    out = Changes()
    for row in pulled:
        before = known.get(row["annotation_id"])
        row = {**row, "withdrawn_at": None, "withdrawn_reason": None}
        if before is None:
            out.new.append({**row, "revision": 1})
        elif before.get("withdrawn_at") is not None:
            out.changed.append({**row, "revision": int(before["revision"]) + 1})
            out.reinstated += 1
        elif any(_differs(row[f], before.get(f)) for f in CHANGE_FIELDS):
            out.changed.append({**row, "revision": int(before["revision"]) + 1})
            out.updated += 1
        else:
            out.unchanged += 1
    for aid, reason in (withdraw or {}).items():
        before = known[aid]
        out.changed.append({**before, "withdrawn_at": at, "withdrawn_reason": reason,
                            "revision": int(before["revision"]) + 1})
        out.withdrawn[reason] = out.withdrawn.get(reason, 0) + 1
    return out


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) > 1e-9
    return a != b
