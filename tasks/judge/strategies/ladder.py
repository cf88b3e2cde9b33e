"""`ladder[:K]`: a judge ladder across models, judged in rounds toward a certified version's target. Rung 0: a
reward model (`--rm-endpoint`) scores every pair; then the GenRM, only for the pairs not yet certified that still
could be: one order, the other order, then further samples of both orders, up to K of each (`certify[:K]`'s rungs
above the reward model's). Which pairs climb is the curation's call between rounds, from the verdicts and the
training labels alone (`tasks.curate.certification.next_rungs`, the same rule as `certify`). `ladder` is
`ladder:2`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tasks.judge.kinds import REWARD_MODEL
from tasks.judge.strategies.certify import Certify
from tasks.judge.strategies.protocol import Slot

if TYPE_CHECKING:
    from common.settings import Settings


@dataclass(frozen=True, slots=True)
class Ladder(Certify):
    usage = "ladder[:K]"

    @classmethod
    def from_spec(cls, k: int | None, settings: Settings | None) -> Ladder:
        return cls(2 if k is None else k)

    @property
    def label(self) -> str:
        return f"ladder:{self.samples}"

    def ladder(self) -> list[list[Slot]]:
        """The reward model's one slot, then `certify`'s rungs on the GenRM (whose first, `initial()`, no pair is
        asked up front: the reward model's round decides which pairs climb to it)."""
        return [REWARD_MODEL.slots(), *Certify.ladder(self)]
