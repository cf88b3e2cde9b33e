"""The benchmark registry: a name on the command line -> its `Benchmark` (`base.py` says what one declares).
Everything that judges, scores or lists benchmarks loops over it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from common.errors import InvalidInputError, choices
from tasks.evaluate.benchmarks import judgebench, rm_bench
from tasks.evaluate.benchmarks.base import Benchmark, Comparison

if TYPE_CHECKING:
    from common.settings import Settings

BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (rm_bench.BENCHMARK, judgebench.BENCHMARK)}


def get_benchmark(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise InvalidInputError(f"{name} is not a judge benchmark: use {choices(BENCHMARKS)}") from None


def scoring_plan(benchmark: str, strategy: str | None, settings: Settings | None = None):
    """The benchmark and the judge strategy it is scored with, refused when either cannot be: a benchmark is scored
    on the same orders for every comparison (a strategy that asks everything up front; never one with follow-ups,
    such as adaptive)."""
    from tasks.judge.strategies import names, parse_strategy, usage

    get_benchmark(benchmark)
    plan = parse_strategy(strategy or "swap", settings)
    if plan.asks_follow_ups:
        raise InvalidInputError(f"evaluate with {usage(names(follow_ups=False))}, not {plan.label}: a benchmark is "
                                "scored on the same orders for every comparison")
    return plan


def comparisons(benchmark: str, rows: list[dict[str, Any]]) -> list[Comparison]:
    make = get_benchmark(benchmark).comparisons
    return [c for row in rows for c in make(row)]


def oracle_rows(items: list[Comparison]) -> list[dict[str, str]]:
    """The labels as a stand-in oracle file: {"prompt", "better", "worse"} per comparison."""
    return [{"prompt": c.prompt, "better": c.response_a if c.winner == "A" else c.response_b,
             "worse": c.response_b if c.winner == "A" else c.response_a} for c in items]


__all__ = ["BENCHMARKS", "Benchmark", "Comparison", "comparisons", "get_benchmark", "oracle_rows", "scoring_plan"]
