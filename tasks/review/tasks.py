"""A pair as a Label Studio task: the conversation and the two answers, in an order drawn per task.

Which response of the pair is shown as "Answer 1" is drawn at random for each task (so a reviewer cannot learn
that one side tends to be the judge's or the source's choice) and kept in the warehouse only. The task carries
the pair id, for reconciling a push whose answer was lost, and nothing of the judge. A digest of what it shows is
kept with it: a task whose texts were edited in Label Studio since is told apart, and so is a task someone else
imported.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from tasks.review.labels import record_id

SIDES = ("a", "b")


def draw_answer_1(n: int, rng: random.Random | None = None) -> list[str]:
    """For each of `n` tasks, the side of the pair shown as "Answer 1": "a" or "b" with equal chances."""
    rng = rng or random.SystemRandom()
    return [SIDES[rng.getrandbits(1)] for _ in range(n)]


def task_data(pair: dict[str, Any], answer_1: str) -> dict[str, Any]:
    """The task's data: `pair` holds pair_id, history (role/content messages), response_a and response_b."""
    if answer_1 not in SIDES:
        raise ValueError(f"answer_1 must be 'a' or 'b', not {answer_1!r}")
    first, second = pair["response_a"], pair["response_b"]
    if answer_1 == "b":
        first, second = second, first
    return {"conversation": [{"role": m["role"], "content": m["content"]} for m in pair["history"]],
            "answer_1": first, "answer_2": second, "pair_id": pair["pair_id"]}


SHOWN = ("conversation", "answer_1", "answer_2", "pair_id")  # what a reviewer reads, and the pair it is of


def texts_digest(data: Any) -> str | None:
    """A digest of what a task shows (its conversation, both answers and its pair id), as recorded at push and
    checked at every pull; None for data that is no task's. Other keys of the data are not shown, so not in it."""
    if not isinstance(data, dict):
        return None
    shown = json.dumps({k: data.get(k) for k in SHOWN}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(shown.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def sort_unrecorded(listed: list[Any], recorded: set[int], planned: dict[str, str]) -> tuple[list[tuple[str, int]],
                                                                                          list[Any]]:
    """Of a project's tasks, those the warehouse has not recorded: (the ones to adopt, as (pair_id, task id), the
    foreign ones). A task is adopted only when its pair is planned for the project and it shows exactly the texts
    the push made for it (`planned`: pair id -> the digest of its planned task), the first such task per pair (by
    id: the one the push created; a later copy is someone else's). Everything else is foreign: left alone."""
    adopt: dict[str, int] = {}
    foreign = []
    for task in sorted(listed, key=lambda t: (record_id(t) is None, record_id(t) or 0)):
        tid = record_id(task)
        if tid is not None and tid in recorded:
            continue
        data = task.get("data") if isinstance(task, dict) else None
        pair = data.get("pair_id") if isinstance(data, dict) else None
        if (tid is not None and isinstance(pair, str) and pair in planned and pair not in adopt
                and texts_digest(data) == planned[pair]):
            adopt[pair] = tid
        else:
            foreign.append(task)
    return list(adopt.items()), foreign
