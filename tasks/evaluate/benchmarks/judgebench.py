"""JudgeBench as a judge benchmark: labelled pairs, each one comparison.

Decided as its authors score pairwise judges: each order gives a winner, and two orders that disagree are
inconsistent and count as wrong. Its source families are grouped as it reports them: mmlu-pro -> knowledge,
livebench-reasoning, livebench-math, livecodebench -> coding.
"""

from __future__ import annotations

from typing import Any

from tasks.evaluate.benchmarks.base import Benchmark, Comparison, item_id, orders_must_agree

NAME = "judgebench"
FAMILIES = ("knowledge", "reasoning", "math", "coding")
# Model-card accuracy of nvidia/Qwen3-Nemotron-235B-A22B-GenRM, in percent.
MODEL_CARD = {"overall": 87.4, "knowledge": 78.6, "reasoning": 95.9, "math": 91.1, "coding": 95.2}


def judgebench_family(source: str) -> str:
    if source.startswith("mmlu-pro"):
        return "knowledge"
    return {"livebench-reasoning": "reasoning", "livebench-math": "math", "livecodebench": "coding"}.get(source, source)


def comparisons(row: dict[str, Any]) -> list[Comparison]:
    label = row["label"]
    if label not in ("A>B", "B>A"):
        raise ValueError(f"JudgeBench pair {row.get('pair_id')}: label {label!r} is not A>B or B>A")
    return [Comparison(item_id(NAME, row["pair_id"]), NAME, judgebench_family(row["source"]), None, None,
                       row["question"], row["response_A"], row["response_B"], label[0])]


BENCHMARK = Benchmark(
    name=NAME,
    comparisons=comparisons,
    decide=orders_must_agree,
    model_card=MODEL_CARD,
    categories=FAMILIES,
)
