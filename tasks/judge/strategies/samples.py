"""`samples:K`: both orders, K samples each (a spread over samples as well as over orders)."""

from __future__ import annotations

from dataclasses import dataclass

from common.errors import InvalidInputError
from tasks.judge.strategies.protocol import Slot, Strategy, both_orders


@dataclass(frozen=True, slots=True)
class Samples(Strategy):
    samples: int = 1
    usage = "samples:K"
    takes_k = True
    one_order_on_purpose = False

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise InvalidInputError("k must be at least 1")

    @classmethod
    def from_spec(cls, k: int | None, settings: object) -> Samples:
        return cls(1 if k is None else k)

    @property
    def label(self) -> str:
        return f"samples:{self.samples}"

    def initial(self) -> list[Slot]:
        return both_orders(self.samples)
