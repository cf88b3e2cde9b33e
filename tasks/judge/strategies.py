"""Which judgments a pair needs: `single`, `swap`, `samples:k`, and `adaptive`.

A judgment is one (order, sample index). Fixed strategies name them all up front. `adaptive` asks for
`ab` first and, only where that verdict is borderline, for `ba` and further samples up to k: on a judge
whose GPU time dominates the cost, confident pairs are not paid for twice. `adaptive` alone is
`adaptive:1`: the opposite order only (the cheaper variant); `adaptive:2` also adds a second sample of each
order on borderline pairs. The default filter policy keeps a pair judged in one order on purpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from common.errors import InvalidInputError
from tasks.judge.genrm import SideVerdict, scores_agree

Slot = tuple[str, int]  # (order, sample index)


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    samples: int = 1  # k for samples:k and the cap for adaptive
    borderline_margin: float = 1.0  # adaptive: |margin| at or below this is borderline (ranking 3 or 4)

    @classmethod
    def parse(cls, text: str, borderline_margin: float = 1.0) -> Strategy:
        text = text.strip().lower()
        if text in ("single", "swap"):
            return cls(text)
        m = re.fullmatch(r"(samples|adaptive)(?::(\d+))?", text)
        if m:
            k = int(m.group(2) or 1)  # adaptive's default variant adds only the opposite order
            if k < 1:
                raise InvalidInputError("k must be at least 1")
            return cls(m.group(1), k, borderline_margin)
        raise InvalidInputError(f"unknown strategy {text!r}: use single, swap, samples:K or adaptive[:K]")

    def initial(self) -> list[Slot]:
        """The judgments every pair gets."""
        if self.name == "single" or self.name == "adaptive":
            return [("ab", 0)]
        if self.name == "swap":
            return [("ab", 0), ("ba", 0)]
        return [(order, i) for i in range(self.samples) for order in ("ab", "ba")]

    def all_slots(self) -> list[Slot]:
        """Every judgment the strategy could ask for (adaptive: at most)."""
        if self.name != "adaptive":
            return self.initial()
        return [(order, i) for i in range(self.samples) for order in ("ab", "ba")]

    def is_borderline(self, side: SideVerdict) -> bool:
        return abs(side.margin) <= self.borderline_margin or not scores_agree(side)

    def follow_ups(self, verdicts: dict[Slot, SideVerdict | None]) -> list[Slot]:
        """adaptive: the next judgments given those so far (None marks a failed one); empty when done."""
        if self.name != "adaptive":
            return []
        first = verdicts.get(("ab", 0))
        if first is None or not self.is_borderline(first):
            return []
        return [s for s in self.all_slots() if s not in verdicts]

    @property
    def label(self) -> str:
        return self.name if self.name in ("single", "swap") else f"{self.name}:{self.samples}"
