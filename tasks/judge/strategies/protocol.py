"""What a judge strategy declares: which judgments a pair needs first, which it may need after a verdict,
and what the curation may conclude from a pair judged in one order.

A judgment is one (order, sample index), a `Slot`. The planner and the dispatcher read a strategy only
through these members, so a new strategy is one class in a module of its own and its entry in the registry
(`__init__.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from common.settings import Settings
    from tasks.judge.genrm import SideVerdict

Slot = tuple[str, int]  # (order, sample index)
Verdicts = Mapping[Slot, "SideVerdict | None"]  # one pair's judgments so far; None marks a failed one
ORDERS = ("ab", "ba")


def both_orders(samples: int) -> list[Slot]:
    """Each sample in both orders, a pair's orders next to each other: ab 0, ba 0, ab 1, ba 1, ..."""
    return [(order, i) for i in range(samples) for order in ORDERS]


def first_order(tried_ab: bool, tried_ba: bool, longer_a: bool) -> str:
    """The order a pair is judged in first by a strategy that judges one order first (`Strategy.orients_first`):
    the one it was already judged or tried in, if it was in exactly one (a pair judged before keeps its first
    order, so nothing is asked twice); else the shorter answer shown first and the longer second (`ab` on a tie).
    A judge's position bias credits the answer shown first and its verbosity bias the longer one: shown this way
    they pull against each other, so a lone first verdict is less often wrong (docs/judging.md#the-first-order)."""
    if tried_ab != tried_ba:
        return "ab" if tried_ab else "ba"
    return "ba" if longer_a else "ab"


def oriented(slots: list[Slot] | tuple[Slot, ...], first: str) -> list[Slot]:
    """A strategy's `slots` as one pair gets them: its `ab` is the pair's first order (`first_order`), its `ba`
    the other; a slot with no order (a reward model's) as it is."""
    if first == "ab":
        return list(slots)
    return [({"ab": "ba", "ba": "ab"}.get(order, order), sample) for order, sample in slots]


def as_shown(strategy: Strategy, slots: list[Slot] | tuple[Slot, ...], tried_ab: bool, tried_ba: bool,
             longer_a: bool) -> list[Slot]:
    """A strategy's `slots` as a pair is shown them: in its first order (`first_order`, from the first-sample orders
    it was tried in and its answers' lengths) where the strategy judges one order first, else as written."""
    if not strategy.orients_first:
        return list(slots)
    return oriented(slots, first_order(tried_ab, tried_ba, longer_a))


def slots_said(slots: list[Slot] | tuple[Slot, ...], strategy: Strategy | None = None) -> str:
    """Judgments as a person reads them: `ab 0`, `ab 1, ba 1`; a strategy's that judges one order first as each
    pair gets them (`orients_first`): `first 0`, `other 0`, `first 1, other 1` (its first order, the other)."""
    names = {"ab": "first", "ba": "other"} if strategy is not None and strategy.orients_first else {}
    return ", ".join(f"{names.get(order, order)} {sample}" for order, sample in slots)


@runtime_checkable
class Strategy(Protocol):
    """A judge strategy. Classes that subclass it get the defaults of a strategy that asks everything up
    front (no follow-ups); one that follows up overrides `all_slots` and `follow_ups`."""

    usage: ClassVar[str]  # how it is written on the command line: `swap`, `samples:K`, `adaptive[:K]`
    takes_k: ClassVar[bool]  # whether `name:K` is accepted
    # A pair it judged in one order was judged so on purpose (the first verdict settled it), not because the
    # second order failed or never came: the curation may keep such a pair. Recorded with each judge run.
    one_order_on_purpose: ClassVar[bool]
    # Its `ab` in `initial()` and `ladder()` means a pair's first order (`first_order`), its `ba` the other; a
    # strategy that asks both orders of every pair (or `ab` alone, as `single`) asks them as written.
    orients_first: ClassVar[bool] = False

    @classmethod
    def from_spec(cls, k: int | None, settings: Settings | None) -> Strategy:
        """The strategy `name[:k]` names; `settings` supply its tunables (None: their defaults)."""
        ...

    @property
    def label(self) -> str:
        """How it is recorded with a run (and parsed back): `single`, `samples:3`, `adaptive:1`."""
        ...

    def initial(self) -> list[Slot]:
        """The judgments every pair gets first."""
        ...

    def all_slots(self) -> list[Slot]:
        """Every judgment it could ask for a pair (what a shard's plan allows)."""
        return self.initial()

    def follow_ups(self, verdicts: Verdicts) -> list[Slot]:
        """The judgments a pair needs next given its verdicts so far; the caller sends only those it has not
        asked for yet. Empty when the pair is done."""
        return []

    @property
    def asks_follow_ups(self) -> bool:
        """Whether a pair's judgments can depend on its verdicts (else every pair gets the same ones)."""
        return set(self.all_slots()) != set(self.initial())

    def ladder(self) -> list[list[Slot]] | None:
        """A strategy that judges in rounds: the judgments each rung asks of a pair (the first, `initial()`, of
        every pair; each later one only of the pairs the curation finds not yet sure between rounds). None: the
        strategy plans each pair alone, by `follow_ups`."""
        return None

    @property
    def judges_in_rounds(self) -> bool:
        return self.ladder() is not None
