"""What a judge benchmark is: an evaluation set whose rows become comparisons, how a comparison's verdicts decide
it, how its accuracy is reported and the judge model card's figures it is set beside.

A comparison is a prompt and two answers, A and B, with the one that should win. A new benchmark is one module
that builds a `Benchmark` and registers it in `tasks.evaluate.benchmarks`: nothing outside that package knows a
benchmark by name (but the module of its evaluation set's `Source`, which reads its prompts for decontamination).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from tasks.ingest.sources import Source

# How the overall accuracy is made: over every comparison scored, or as the mean of the declared categories'
# accuracies that are present (a copy missing one says so, in `domains_missing`).
POOLED, MEAN_OF_CATEGORIES = "pooled", "mean of categories"


@dataclass(frozen=True, slots=True)
class Comparison:
    item_id: str  # stable: the judgment cache key
    benchmark: str
    category: str  # one of its benchmark's categories (or a name its rows carry that the benchmark does not map)
    difficulty: str | None  # one of its benchmark's difficulties, if it declares any
    cell: str | None  # its cell of its benchmark's matrix, if it declares one
    prompt: str
    response_a: str
    response_b: str
    winner: str  # "A" | "B"

    @property
    def history(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.prompt}]


# The A-side margins of a comparison's verdicts (every sample of every order asked, each order at least once)
# -> "A", "B", "tie" or "inconsistent".
Decision = Callable[[list[float]], str]


def orders_must_agree(margins: list[float]) -> str:
    """Each verdict picks a winner (a zero margin picks B); verdicts that disagree are inconsistent."""
    winners = {"A" if m > 0 else "B" for m in margins}
    return winners.pop() if len(winners) == 1 else "inconsistent"


def mean_margin(margins: list[float]) -> str:
    """The mean A-side margin picks the winner; a zero mean is a tie."""
    mean = sum(margins) / len(margins)
    return "A" if mean > 0 else "B" if mean < 0 else "tie"


@dataclass(frozen=True)
class Benchmark:
    # its evaluation set's name in the source registry: its rows are that `Source`'s (Hub id, splits, pinned revision)
    name: str
    # one raw row -> its comparisons; a KeyError, TypeError or ValueError says the row is not a comparison
    comparisons: Callable[[dict[str, Any]], list[Comparison]]
    decide: Decision
    # the judge model card's accuracy in percent: "overall", and per category or difficulty where it gives one
    model_card: dict[str, float]
    categories: tuple[str, ...]
    overall: Literal["pooled", "mean of categories"] = POOLED
    difficulties: tuple[str, ...] = ()  # reported as `by_difficulty`, in this order
    cells: tuple[str, ...] = ()  # reported as `matrix`: per category, every cell in this order

    @property
    def source(self) -> Source:
        from tasks.ingest.sources import get_source

        return get_source(self.name, kind="eval_prompts")


def item_id(*parts: Any) -> str:
    """A comparison's stable id from what identifies it in its benchmark."""
    return hashlib.blake2b("\0".join(map(str, parts)).encode(), digest_size=16).hexdigest()
