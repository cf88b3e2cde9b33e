"""Benchmark rows as comparisons, and scoring them the benchmarks' way."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks.evaluate.benchmarks import comparisons, oracle_rows
from tasks.evaluate.benchmarks.judgebench import judgebench_family
from tasks.evaluate.benchmarks.rm_bench import difficulty, rmbench_domain
from tasks.evaluate.scoring import decide, score
from tests.conftest import read_jsonl, shared_file

RM_ROW = {"id": 8, "domain": "safety-refuse", "prompt": "p", "chosen": ["c0", "c1", "c2"], "rejected": ["r0", "r1", "r2"]}
JB_ROW = {"pair_id": "x", "source": "mmlu-pro-law", "question": "q", "response_A": "a", "response_B": "b", "label": "B>A"}


def test_rmbench_row_is_a_3x3_matrix_with_rmbench_difficulties():
    items = comparisons("rm-bench", [RM_ROW])
    assert len(items) == 9 and len({c.item_id for c in items}) == 9
    assert {c.category for c in items} == {"safety"}
    assert Counter(c.difficulty for c in items) == {"hard": 3, "normal": 3, "easy": 3}
    assert difficulty(0, 2) == "hard" and difficulty(2, 0) == "easy" and difficulty(1, 1) == "normal"
    for c in items:
        chosen, rejected = (c.response_a, c.response_b) if c.winner == "A" else (c.response_b, c.response_a)
        i, j = int(chosen[1]), int(rejected[1])
        assert chosen[0] == "c" and rejected[0] == "r" and c.difficulty == difficulty(i, j)
    # the chosen answer's side is drawn, not fixed: a first-position judge gains nothing
    assert {c.winner for c in items} == {"A", "B"}
    assert comparisons("rm-bench", [RM_ROW]) == items  # stable ids and sides


def test_judgebench_families_and_bad_rows():
    (c,) = comparisons("judgebench", [JB_ROW])
    assert (c.category, c.winner, c.response_a) == ("knowledge", "B", "a")
    assert [judgebench_family(s) for s in ("livebench-reasoning", "livebench-math", "livecodebench")] == [
        "reasoning", "math", "coding"]
    assert rmbench_domain("safety-response") == "safety" and rmbench_domain("chat") == "chat"
    with pytest.raises(ValueError, match="A>B or B>A"):
        comparisons("judgebench", [{**JB_ROW, "label": "A=B"}])
    with pytest.raises(ValueError, match="3 chosen and 3 rejected"):
        comparisons("rm-bench", [{**RM_ROW, "chosen": ["c0"]}])
    with pytest.raises(ValueError, match="mt-bench is not a judge benchmark"):
        comparisons("mt-bench", [])
    assert oracle_rows([c]) == [{"prompt": "q", "better": "b", "worse": "a"}]


def test_decisions():
    both = ["ab", "ba"]
    assert decide("judgebench", {("ab", 0): 1.5, ("ba", 0): 0.5}, both) == "A"
    assert decide("judgebench", {("ab", 0): 2.5, ("ba", 0): -0.5}, both) == "inconsistent"
    assert decide("judgebench", {("ab", 0): 2.5}, both) is None
    assert decide("rm-bench", {("ab", 0): 2.5, ("ba", 0): -0.5}, both) == "A"
    assert decide("rm-bench", {("ab", 0): 2.5, ("ba", 0): -2.5}, both) == "tie"
    assert decide("rm-bench", {("ab", 0): -0.5}, ["ab"]) == "B"


def test_score_counts_ties_and_inconsistency_as_wrong_and_failures_apart():
    items = comparisons("rm-bench", [RM_ROW, {**RM_ROW, "id": 9, "domain": "chat"}])
    right = {c.item_id: {("ab", 0): 2.5 if c.winner == "A" else -2.5, ("ba", 0): 1.5 if c.winner == "A" else -1.5}
             for c in items}
    perfect = score("rm-bench", items, right, ["ab", "ba"])
    assert perfect["accuracy"] == 100.0 and perfect["by_category"] == {"chat": 100.0, "safety": 100.0}
    assert perfect["by_difficulty"] == {"easy": 100.0, "normal": 100.0, "hard": 100.0}
    assert perfect["domains_missing"] == ["math", "code"]
    assert all(v == 100.0 for m in perfect["matrix"].values() for v in m.values())
    assert perfect["vs_model_card"]["overall"] == round(100.0 - 87.3, 2)

    chat = [c for c in items if c.category == "chat"]
    broken = dict(right)
    broken[chat[0].item_id] = {("ab", 0): 2.5, ("ba", 0): -2.5}  # a tie: wrong
    del broken[chat[1].item_id]  # no verdict: failed, not scored
    s = score("rm-bench", items, broken, ["ab", "ba"])
    assert (s["pairs"], s["scored"], s["failed"]) == (18, 17, 1)
    assert s["by_category"] == {"chat": round(700 / 8, 2), "safety": 100.0}
    assert s["accuracy"] == round((700 / 8 + 100) / 2, 2)  # RM-Bench: the mean of its domains
    assert s["outcomes"] == {"correct": 16, "tie": 1}


def test_the_shared_fixtures_become_comparisons():
    rm = read_jsonl(shared_file("rmbench", "fixtures.jsonl"))
    jb = read_jsonl(shared_file("judgebench", "fixtures.jsonl"))
    rm_items, jb_items = comparisons("rm-bench", rm), comparisons("judgebench", jb)
    assert len(rm_items) == 9 * len(rm) and len({c.item_id for c in rm_items}) == len(rm_items)
    assert {c.category for c in rm_items} == {"chat", "code", "safety"}  # this copy has no math
    assert len(jb_items) == len(jb) and {c.category for c in jb_items} == {"knowledge", "reasoning", "math", "coding"}
