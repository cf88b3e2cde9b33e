"""`swap`: both orders once, so that the two verdicts can be compared (position bias)."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.judge.strategies.protocol import Slot, Strategy, both_orders


@dataclass(frozen=True, slots=True)
class Swap(Strategy):
    usage = "swap"
    takes_k = False
    one_order_on_purpose = False
    label = "swap"

    @classmethod
    def from_spec(cls, k: int | None, settings: object) -> Swap:
        return cls()

    def initial(self) -> list[Slot]:
        return both_orders(1)
