"""`single`: the `ab` order once. Cheapest, and blind to position bias: the curation keeps none of its
pairs unless the policy allows pairs judged in one order."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.judge.strategies.protocol import Slot, Strategy


@dataclass(frozen=True, slots=True)
class Single(Strategy):
    usage = "single"
    takes_k = False
    one_order_on_purpose = False  # one order by design, but nothing decided it was enough
    label = "single"

    @classmethod
    def from_spec(cls, k: int | None, settings: object) -> Single:
        return cls()

    def initial(self) -> list[Slot]:
        return [("ab", 0)]
