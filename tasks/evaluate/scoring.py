"""Accuracy of a judge on benchmark comparisons, from its verdicts mapped to response A's side.

Decisions: JudgeBench as its authors score pairwise judges: each order gives a winner, two orders that
disagree are inconsistent and count as wrong. RM-Bench as this project curates: the mean A-side margin
over the orders judged picks the winner, a zero mean (a tie) counts as wrong, as RM-Bench counts an
equal reward as not preferring the chosen answer. A comparison with a failed or missing verdict counts
as failed and is left out of the accuracy (reported beside it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from tasks.evaluate.benchmarks import MODEL_CARD, RM_BENCH_DOMAINS, STYLES, Comparison

# (order, sample) -> A-side margin (3.5 - ranking_a); positive means A is better
Verdicts = dict[tuple[str, int], float]


def decide(benchmark: str, verdicts: Verdicts, orders: Iterable[str]) -> str | None:
    """'A', 'B', 'tie' or 'inconsistent'; None when a needed verdict is missing."""
    needed = list(orders)
    got = {o: [m for (order, _), m in verdicts.items() if order == o] for o in needed}
    if any(not got[o] for o in needed):
        return None
    if benchmark == "judgebench":
        winners = {("A" if m > 0 else "B") for o in needed for m in got[o]}
        return winners.pop() if len(winners) == 1 else "inconsistent"
    margins = [m for o in needed for m in got[o]]
    mean = sum(margins) / len(margins)
    return "A" if mean > 0 else "B" if mean < 0 else "tie"


def _pct(hits: int, total: int) -> float | None:
    return round(100.0 * hits / total, 2) if total else None


def score(benchmark: str, items: list[Comparison], verdicts: dict[str, Verdicts], orders: list[str]) -> dict[str, Any]:
    """Accuracy overall and by category (and, for RM-Bench, by difficulty and the 3x3 matrix per domain)."""
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    matrix: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    outcomes: dict[str, int] = defaultdict(int)
    failed = 0
    for c in items:
        decision = decide(benchmark, verdicts.get(c.item_id, {}), orders)
        if decision is None:
            failed += 1
            continue
        outcomes[decision if decision in ("tie", "inconsistent") else "correct" if decision == c.winner else "wrong"] += 1
        ok = int(decision == c.winner)
        keys = ["all", c.category] + ([c.difficulty] if c.difficulty else [])
        for key in keys:
            hits[key][0] += ok
            hits[key][1] += 1
        if c.cell:
            matrix[c.category][c.cell][0] += ok
            matrix[c.category][c.cell][1] += 1
    by_category = {k: _pct(*v) for k, v in sorted(hits.items()) if k not in ("all", "easy", "normal", "hard")}
    result: dict[str, Any] = {
        "benchmark": benchmark, "pairs": len(items), "scored": hits["all"][1], "failed": failed,
        "outcomes": dict(outcomes), "by_category": by_category, "orders": orders,
    }
    if benchmark == "rm-bench":
        # RM-Bench's overall is the mean of its domain accuracies (chat, math, code, safety) that are present
        present = [by_category[d] for d in RM_BENCH_DOMAINS if by_category.get(d) is not None]
        result["accuracy"] = round(sum(present) / len(present), 2) if present else None
        result["domains_missing"] = [d for d in RM_BENCH_DOMAINS if by_category.get(d) is None]
        result["by_difficulty"] = {d: _pct(*hits[d]) for d in ("easy", "normal", "hard") if hits[d][1]}
        result["matrix"] = {dom: {f"{ci}>{rj}": _pct(*cells[f"{ci}>{rj}"]) for ci in STYLES for rj in STYLES}
                            for dom, cells in sorted(matrix.items())}
    else:
        result["accuracy"] = _pct(*hits["all"])
    result["model_card"] = MODEL_CARD[benchmark]
    result["vs_model_card"] = {k: round(v - MODEL_CARD[benchmark][k], 2) for k, v in
                               [("overall", result["accuracy"]), *result["by_category"].items(),
                                *result.get("by_difficulty", {}).items()]
                               if v is not None and k in MODEL_CARD[benchmark]}
    return result
