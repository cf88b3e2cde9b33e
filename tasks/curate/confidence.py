"""How sure the judge is about a pair, from all its verdicts on response A's side (pure functions).

- `margin`: the mean signed margin (3.5 - ranking_a), from +2.5 (A much better) to -2.5 (B much better).
- `orders_agree`: both orders point the same way (None when only one order was asked).
- `scores_agree`: every verdict's two scores point the way its ranking does (equal scores agree).
- `spread`: the standard deviation of the margins (0 for a single verdict).
- `human_agrees`: the judge's direction equals the human label's (None without a label).
- `confidence` in [0, 1]: strength x consistency, where strength = |margin| / 2.5 and consistency =
  (share of verdicts on the side of the mean) x (share of verdicts whose scores agree with their
  ranking). It is 1 only when every verdict says "much better" for the same response with consistent
  scores, and 0 for a tie or when the verdicts cancel out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tasks.judge.genrm import SideVerdict, scores_agree

MAX_MARGIN = 2.5


@dataclass(frozen=True, slots=True)
class Confidence:
    margin: float
    direction: str  # "a" | "b" | "tie"
    orders_agree: bool | None
    scores_agree: bool
    spread: float
    human_agrees: bool | None
    confidence: float
    verdicts: int


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def pair_confidence(verdicts: list[tuple[str, SideVerdict]], human_label: float | None = None) -> Confidence:
    """`verdicts`: (order, verdict on A's side) for every ok judgment of one pair under one configuration."""
    if not verdicts:
        raise ValueError("a pair needs at least one verdict")
    margins = [v.margin for _, v in verdicts]
    mean = sum(margins) / len(margins)
    direction = "a" if mean > 0 else "b" if mean < 0 else "tie"
    by_order: dict[str, list[float]] = {}
    for order, v in verdicts:
        by_order.setdefault(order, []).append(v.margin)
    orders_agree = None
    if len(by_order) == 2:
        signs = {_sign(sum(ms) / len(ms)) for ms in by_order.values()}
        orders_agree = len(signs) == 1
    agreeing_scores = sum(scores_agree(v) for _, v in verdicts)
    spread = math.sqrt(sum((m - mean) ** 2 for m in margins) / len(margins))
    on_side = sum(_sign(m) == _sign(mean) for m in margins) if mean != 0 else 0
    consistency = (on_side / len(margins)) * (agreeing_scores / len(margins))
    human = None if human_label is None else _sign(human_label) == _sign(mean)
    return Confidence(
        margin=round(mean, 6),
        direction=direction,
        orders_agree=orders_agree,
        scores_agree=agreeing_scores == len(verdicts),
        spread=round(spread, 6),
        human_agrees=human,
        confidence=round(min(1.0, abs(mean) / MAX_MARGIN) * consistency, 6),
        verdicts=len(verdicts),
    )
