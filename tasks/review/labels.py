"""A reviewer's annotation as a label on the pair.

A choice is made on the task's sides ("Answer 1", "Answer 2", "Tie", "Both bad"); the task's mapping (which
response was shown first) turns it into the pair's sides: "a", "b", "tie" or "both_bad". Only submitted
annotations count: a skipped task (Label Studio's `was_cancelled`) or one without a choice is not a review.

On the human-label scale (from response A's side) a reviewer's pick is a clear preference without a strength:
it counts as the weakest clear label of the pair's source (the clear label the source declares), a tie as 0,
both-bad as a tie flagged both-bad (as a source's own both-bad votes are).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from tasks.review.interface import ANSWER_1, ANSWER_2, BOTH_BAD, CHOICE_VALUES, PREFERENCE, TIE

OUTCOMES = ("a", "b", TIE, BOTH_BAD)


def choice_of(result: list[dict[str, Any]] | None) -> str | None:
    """The reviewer's choice in an annotation's result: answer_1 | answer_2 | tie | both_bad, or None."""
    for item in result or []:
        if item.get("from_name") == PREFERENCE and item.get("type") == "choices":
            picked = (item.get("value") or {}).get("choices") or []
            if len(picked) == 1 and picked[0] in CHOICE_VALUES:
                return CHOICE_VALUES[picked[0]]
    return None


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


def human_label_of(outcome: str, source: str) -> tuple[float | None, bool]:
    """(label on A's side, both-bad) for a reviewed outcome; (None, False) for a split."""
    if outcome in ("a", "b"):
        # the registry loads every source's schema: only when a label is made, not when the review CLI starts
        from tasks.ingest.sources import clear_label_of

        clear = clear_label_of(source)  # the weakest clear label of the source's scale, as the calibration counts
        return (clear if outcome == "a" else -clear), False
    if outcome in (TIE, BOTH_BAD):
        return 0.0, outcome == BOTH_BAD
    return None, False


def parse_time(text: str | None) -> datetime | None:
    """Label Studio's ISO times (UTC, "Z") as naive UTC, as the warehouse stores times."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc).replace(tzinfo=None)


def review_rows(project_key: str, server: str, tasks: list[dict[str, Any]], mapping: dict[int, tuple[str, str]],
                annotators: dict[int, str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The submitted annotations of `tasks` (Label Studio's tasks with their annotations) as human_reviews rows,
    and what was passed over, counted: `skipped` (cancelled), `no_choice`, `unknown_task` (a task this warehouse
    did not push)."""
    rows, passed = [], {"skipped": 0, "no_choice": 0, "unknown_task": 0}
    for task in tasks:
        annotations = task.get("annotations") or []
        if task.get("id") not in mapping:
            passed["unknown_task"] += len(annotations)
            continue
        pair_id, answer_1 = mapping[task["id"]]
        for a in annotations:
            if a.get("was_cancelled"):
                passed["skipped"] += 1
                continue
            choice = choice_of(a.get("result"))
            if choice is None:
                passed["no_choice"] += 1
                continue
            annotator = a.get("completed_by")
            annotator = annotator.get("id") if isinstance(annotator, dict) else annotator
            rows.append({
                "project_key": project_key, "annotation_id": int(a["id"]), "server": server,
                "ls_task_id": int(task["id"]), "pair_id": pair_id, "choice": choice, "side": side_of(choice, answer_1),
                "annotator_id": int(annotator), "annotator": annotators.get(int(annotator)),
                "created_at": parse_time(a.get("created_at")),
                "updated_at": parse_time(a.get("updated_at")) or parse_time(a.get("created_at")),
                "lead_time_s": None if a.get("lead_time") is None else float(a["lead_time"]),
            })
    return rows, passed


CHANGE_FIELDS = ("choice", "side", "updated_at", "lead_time_s", "annotator_id")


def changes(pulled: list[dict[str, Any]], known: dict[int, dict[str, Any]]) -> tuple[list[dict], list[dict], int]:
    """(new rows, changed rows with their next revision, unchanged count): an annotation Label Studio changed
    since the last pull (its choice, time or lead time) replaces its row; the earlier state is kept as history."""
    new, changed, same = [], [], 0
    for row in pulled:
        before = known.get(row["annotation_id"])
        if before is None:
            new.append({**row, "revision": 1})
        elif any(_differs(row[f], before.get(f)) for f in CHANGE_FIELDS):
            changed.append({**row, "revision": int(before["revision"]) + 1})
        else:
            same += 1
    return new, changed, same


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) > 1e-9
    return a != b
