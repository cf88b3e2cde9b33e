"""`certify[:K]`: judging in rounds that escalate only where a certified version needs it: every pair in one order
first (the shorter answer shown first, `protocol.first_order`: the ladder's `ab` is a pair's first order); the
other order for the pairs not yet sure; then further samples of both orders, up to K of each, for the pairs whose
verdicts still contradict each other. Which pairs are "not yet sure" is the curation's call, made
between rounds from the verdicts and the training labels (`tasks.curate.certification.next_rungs`, run by
`tasks.review.rounds`): this class only declares the ladder. `certify` alone is `certify:2`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.errors import InvalidInputError
from tasks.judge.strategies.protocol import Slot, Strategy, both_orders

if TYPE_CHECKING:
    from common.settings import Settings


@dataclass(frozen=True, slots=True)
class Certify(Strategy):
    samples: int = 2  # the most samples of each order a pair can get
    usage = "certify[:K]"
    takes_k = True
    one_order_on_purpose = True  # a pair left with one order was sure enough after it
    orients_first = True

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise InvalidInputError("k must be at least 1")

    @classmethod
    def from_spec(cls, k: int | None, settings: Settings | None) -> Certify:
        return cls(2 if k is None else k)

    @property
    def label(self) -> str:
        return f"certify:{self.samples}"

    def initial(self) -> list[Slot]:
        return [("ab", 0)]

    def all_slots(self) -> list[Slot]:
        return both_orders(self.samples)

    def ladder(self) -> list[list[Slot]]:
        """The rounds' judgments: `ab 0`; `ba 0`; then `ab i, ba i` for each further sample."""
        return [[("ab", 0)], [("ba", 0)], *[both_orders(self.samples)[2 * i:2 * i + 2] for i in range(1, self.samples)]]
