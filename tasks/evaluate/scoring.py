"""Accuracy of a judge on benchmark comparisons, from its verdicts mapped to response A's side, each benchmark
as it declares (`tasks.evaluate.benchmarks`): how a comparison's verdicts decide it, how the overall is made,
which difficulties and matrix cells it reports. A tie or an inconsistent decision counts as wrong; a comparison
with a failed or missing verdict counts as failed and is left out of the accuracy (reported beside it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from schemas.summaries import EvaluationSummary
from tasks.evaluate.benchmarks import get_benchmark
from tasks.evaluate.benchmarks.base import MEAN_OF_CATEGORIES, Comparison

# (order, sample) -> A-side margin (3.5 - ranking_a); positive means A is better
Verdicts = dict[tuple[str, int], float]


def decide(benchmark: str, verdicts: Verdicts, orders: Iterable[str]) -> str | None:
    """'A', 'B', 'tie' or 'inconsistent'; None when a needed verdict is missing."""
    needed = list(orders)
    got = {o: [m for (order, _), m in verdicts.items() if order == o] for o in needed}
    if any(not got[o] for o in needed):
        return None
    return get_benchmark(benchmark).decide([m for o in needed for m in got[o]])


def _pct(hits: int, total: int) -> float | None:
    return round(100.0 * hits / total, 2) if total else None


def score(benchmark: str, items: list[Comparison], verdicts: dict[str, Verdicts], orders: list[str]) -> EvaluationSummary:
    """Accuracy overall and by category (and by difficulty, and per category over the matrix's cells, for a
    benchmark that declares them)."""
    bench = get_benchmark(benchmark)
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # category -> [right, scored]
    by_difficulty: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    matrix: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    outcomes: dict[str, int] = defaultdict(int)
    scored = right = failed = 0
    for c in items:
        decision = decide(benchmark, verdicts.get(c.item_id, {}), orders)
        if decision is None:
            failed += 1
            continue
        outcomes[decision if decision in ("tie", "inconsistent") else "correct" if decision == c.winner else "wrong"] += 1
        ok = int(decision == c.winner)
        scored, right = scored + 1, right + ok
        tallies = [hits[c.category]] + ([by_difficulty[c.difficulty]] if c.difficulty else []) \
            + ([matrix[c.category][c.cell]] if c.cell else [])
        for tally in tallies:
            tally[0] += ok
            tally[1] += 1
    by_category = {k: _pct(*v) for k, v in sorted(hits.items())}
    result: EvaluationSummary = {
        "benchmark": benchmark, "pairs": len(items), "scored": scored, "failed": failed,
        "outcomes": dict(outcomes), "by_category": by_category, "orders": orders,
    }
    if bench.overall == MEAN_OF_CATEGORIES:  # the mean of its categories' accuracies that are present
        present = [by_category[d] for d in bench.categories if by_category.get(d) is not None]
        result["accuracy"] = round(sum(present) / len(present), 2) if present else None
        result["domains_missing"] = [d for d in bench.categories if by_category.get(d) is None]
    else:
        result["accuracy"] = _pct(right, scored)
    if bench.difficulties:
        result["by_difficulty"] = {d: _pct(*by_difficulty[d]) for d in bench.difficulties if by_difficulty[d][1]}
    if bench.cells:
        result["matrix"] = {category: {cell: _pct(*cells[cell]) for cell in bench.cells}
                            for category, cells in sorted(matrix.items())}
    card = bench.model_card
    result["model_card"] = card
    result["vs_model_card"] = {k: round(v - card[k], 2) for k, v in
                               [("overall", result["accuracy"]), *by_category.items(),
                                *result.get("by_difficulty", {}).items()]
                               if v is not None and k in card}
    return result
