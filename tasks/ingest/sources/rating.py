"""The pairing rule of rated responses, one implementation for UltraFeedback and the declared `rated` format
(docs/sources.md#rated-rated-responses): only a row's first `CURATE_MAX_COMPLETIONS_PER_ROW` responses are read (the
rest rejected as `completions_over_cap`), each is rated on its own (an unusable one is rejected by name while the
others still pair), fewer than two usable ones is `fewer_than_two_completions`, and the best is paired against each
usable one at least `min_gap` worse (differences rounded to 6 decimals: 4.1 - 3.1 is 1), in position order; a row
that makes no pair is `no_clear_preference`.

What a source brings: how one response is rated (`rate`, per row), its value (higher is better), which of equal best
values is the best (`tiebreak`, the least), the word its details use and the detail of a row without a clear
preference. The pairs it makes of the best and each worse response are its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from common.reasons import AdapterRejection
from schemas.pair import Rejection


class Positioned(Protocol):
    @property
    def position(self) -> int: ...


R = TypeVar("R", bound=Positioned)


@dataclass(frozen=True, slots=True)
class Ranking(Generic[R]):
    """A row's usable responses ranked: the best, the others (position order) and each one's gap to the best."""

    best: R
    others: list[R]
    gaps: dict[int, float]  # position -> the best's value minus its value, rounded to 6 decimals
    min_gap: float

    @property
    def worse(self) -> list[R]:
        """The responses the best is paired against: at least `min_gap` worse, in position order."""
        return [r for r in self.others if self.gaps[r.position] >= self.min_gap]

    @property
    def ties(self) -> int:
        """How many tie the best (they make no pair)."""
        return sum(g == 0 for g in self.gaps.values())

    @property
    def within_gap(self) -> int:
        """How many are worse than the best by less than `min_gap` (they make no pair)."""
        return len(self.gaps) - self.ties - len(self.worse)


@dataclass(frozen=True, slots=True)
class PairingRule(Generic[R]):
    """The best against each response at least `min_gap` worse (see the module)."""

    min_gap: float
    value: Callable[[R], float]  # higher is better
    tiebreak: Callable[[R], Any]  # among equal best values, the least is the best
    noun: str  # what the details call a row's responses ("completions")
    no_clear_detail: Callable[[Ranking[R]], str]

    def rank(self, rated: list[R]) -> Ranking[R]:
        top = max(self.value(r) for r in rated)
        best = min((r for r in rated if self.value(r) == top), key=self.tiebreak)
        others = [r for r in rated if r is not best]
        return Ranking(best, others, {r.position: round(top - self.value(r), 6) for r in others}, self.min_gap)

    def ranked(self, items: list[Any], cap: int, rate: Callable[[int, Any], R | Rejection]
               ) -> Iterator[Rejection | Ranking[R]]:
        """A rejection for each part of the row that cannot be used (the responses over the cap, each unusable
        response, too few usable ones, no clear preference), then the row's ranking when it makes a pair."""
        if len(items) > cap:
            yield Rejection([AdapterRejection.COMPLETIONS_OVER_CAP.of(cap)],
                            f"{len(items)} {self.noun}: those at positions {cap} and after left out")
            items = items[:cap]
        rated = []
        for position, item in enumerate(items):
            result = rate(position, item)
            if isinstance(result, Rejection):
                yield result
            else:
                rated.append(result)
        if len(rated) < 2:
            yield Rejection([AdapterRejection.FEWER_THAN_TWO_COMPLETIONS],
                            f"{len(rated)} of {len(items)} {self.noun} usable")
            return
        ranking = self.rank(rated)
        if not ranking.worse:
            yield Rejection([AdapterRejection.NO_CLEAR_PREFERENCE], self.no_clear_detail(ranking))
            return
        yield ranking
