"""A pair as a Label Studio task: the conversation and the two answers, in an order drawn per task.

Which response of the pair is shown as "Answer 1" is drawn at random for each task (so a reviewer cannot learn
that one side tends to be the judge's or the source's choice) and kept in the warehouse only. The task carries
the pair id, for reconciling a push whose answer was lost, and nothing of the judge.
"""

from __future__ import annotations

import random
from typing import Any

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


def answer_1_from_texts(data: dict[str, Any], response_a: str, response_b: str) -> str | None:
    """Which side a task found in Label Studio shows first, read from its texts; None when they are not the
    pair's two responses (a task edited by hand)."""
    shown = (data.get("answer_1"), data.get("answer_2"))
    if shown == (response_a, response_b):
        return "a"
    if shown == (response_b, response_a):
        return "b"
    return None
