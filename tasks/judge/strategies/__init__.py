"""Judge strategies by name, and the one way to read one from its text (`single`, `swap`, `samples:K`,
`adaptive[:K]`): flags, settings, shard plans and run records all go through `parse_strategy`.

A new strategy is a module here with one class (see `protocol.Strategy`) and its line in `STRATEGIES`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from common.errors import InvalidInputError
from tasks.judge.strategies.adaptive import Adaptive
from tasks.judge.strategies.certify import Certify
from tasks.judge.strategies.ladder import Ladder
from tasks.judge.strategies.protocol import (
    ORDERS,
    Slot,
    Strategy,
    Verdicts,
    as_shown,
    both_orders,
    first_order,
    oriented,
    slots_said,
)
from tasks.judge.strategies.samples import Samples
from tasks.judge.strategies.single import Single
from tasks.judge.strategies.swap import Swap

if TYPE_CHECKING:
    from common.settings import Settings

__all__ = ["ORDERS", "STRATEGIES", "Ladder", "Slot", "Strategy", "Verdicts", "as_shown", "both_orders", "first_order",
           "names", "oriented", "parse_strategy", "slots_said", "usage"]

STRATEGIES: dict[str, type[Strategy]] = {
    "single": Single,
    "swap": Swap,
    "samples": Samples,
    "adaptive": Adaptive,
    "certify": Certify,
    "ladder": Ladder,
}


def names(follow_ups: bool | None = None) -> list[str]:
    """The registered names, in order; only those whose strategy (as `name` alone writes it) asks follow-ups
    (True) or asks everything up front (False)."""
    return [n for n, kind in STRATEGIES.items()
            if follow_ups is None or kind.from_spec(None, None).asks_follow_ups == follow_ups]


def usage(of: list[str] | None = None, sep: str | None = None) -> str:
    """How the strategies (or those named in `of`) are written: `single, swap, samples:K or adaptive[:K]`, or
    joined by `sep` (`single | swap | ...`)."""
    forms = [STRATEGIES[n].usage for n in (of or STRATEGIES)]
    if sep is not None or len(forms) == 1:
        return (sep or "").join(forms)
    return f"{', '.join(forms[:-1])} or {forms[-1]}"


def parse_strategy(text: str, settings: Settings | None = None) -> Strategy:
    """The strategy `text` names (`name` or `name:K`, any case); `settings` supply tunables such as the adaptive
    margin (None: their defaults, enough wherever only the judgments a strategy names matter)."""
    spec = text.strip().lower()
    m = re.fullmatch(r"([a-z][a-z_-]*)(?::(\d+))?", spec)
    kind = STRATEGIES.get(m.group(1)) if m else None
    if kind is None or (m.group(2) is not None and not kind.takes_k):
        raise InvalidInputError(f"unknown strategy {spec!r}: use {usage()}")
    try:
        return kind.from_spec(None if m.group(2) is None else int(m.group(2)), settings)
    except InvalidInputError as err:  # "k must be at least 1" says which strategy it is about
        raise InvalidInputError(f"strategy {spec!r}: {err}") from None
