"""`adaptive[:K]`: one order first (the shorter answer shown first, `protocol.first_order`); the opposite order,
and further samples up to K, only where that verdict is borderline. On a judge whose GPU time dominates the cost,
confident pairs are not paid for twice.

`adaptive` alone is `adaptive:1`: the opposite order only (the cheaper variant); `adaptive:2` also adds a
second sample of each order on borderline pairs. A pair left with one order was judged so on purpose, and
the default filter policy keeps it when that verdict is decisive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.errors import InvalidInputError
from tasks.judge.genrm import SideVerdict, scores_agree
from tasks.judge.strategies.protocol import Slot, Strategy, Verdicts, both_orders

if TYPE_CHECKING:
    from common.settings import Settings


@dataclass(frozen=True, slots=True)
class Adaptive(Strategy):
    samples: int = 1  # the most samples of each order a borderline pair gets
    borderline_margin: float = 1.0  # |margin| at or below this is borderline (ranking 3 or 4)
    usage = "adaptive[:K]"
    takes_k = True
    one_order_on_purpose = True
    orients_first = True

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise InvalidInputError("k must be at least 1")

    @classmethod
    def from_spec(cls, k: int | None, settings: Settings | None) -> Adaptive:
        k = 1 if k is None else k  # the default variant adds only the opposite order
        return cls(k) if settings is None else cls(k, settings.judge_adaptive_margin)

    @property
    def label(self) -> str:
        return f"adaptive:{self.samples}"

    def initial(self) -> list[Slot]:
        return [("ab", 0)]

    def all_slots(self) -> list[Slot]:
        return both_orders(self.samples)

    def is_borderline(self, side: SideVerdict) -> bool:
        return abs(side.margin) <= self.borderline_margin or not scores_agree(side)

    def follow_ups(self, verdicts: Verdicts) -> list[Slot]:
        # the pair's first order's verdict: `ab 0` as this strategy writes it, `ba 0` where the pair was shown the
        # other way first (`protocol.oriented`)
        first = verdicts[("ab", 0)] if ("ab", 0) in verdicts else verdicts.get(("ba", 0))
        if first is None or not self.is_borderline(first):  # a failed first verdict is retried, not followed up
            return []
        return [s for s in self.all_slots() if s not in verdicts]
