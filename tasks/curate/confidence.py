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

import numpy as np

from tasks.judge.genrm import MAX_MARGIN, SideVerdict, scores_agree


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


@dataclass(frozen=True, slots=True)
class Confidences:
    """`pair_confidence` for every pair of a pool at once (arrays aligned with the pool). `verdicts` 0 marks a
    pair without verdicts (its other entries are 0). Tri-state flags are int8: 1 true, 0 false, -1 none."""

    margin: np.ndarray  # float64, rounded to 6 places
    direction: np.ndarray  # int8: 1 A, -1 B, 0 tie
    orders_agree: np.ndarray  # int8 (-1: one order only)
    scores_agree: np.ndarray  # bool
    spread: np.ndarray  # float64
    human_agrees: np.ndarray  # int8 (-1: no human label)
    confidence: np.ndarray  # float64
    verdicts: np.ndarray  # int64
    order_margin_ab: np.ndarray  # float64: mean margin of the ab order on A's side, NaN when not judged
    order_margin_ba: np.ndarray


def pool_confidences(n: int, v_pair: np.ndarray, v_ab: np.ndarray, v_margin: np.ndarray, v_scores_agree: np.ndarray,
                     human_label: np.ndarray) -> Confidences:
    """The same numbers as `pair_confidence`, for `n` pairs from their flat verdicts (`v_pair` indexes the
    pair of each verdict; `human_label` is NaN where there is none)."""
    count = np.bincount(v_pair, minlength=n).astype(np.int64)
    safe = np.maximum(count, 1)
    mean = np.bincount(v_pair, weights=v_margin, minlength=n) / safe
    sign = np.sign(mean).astype(np.int8)
    dev = v_margin - mean[v_pair]
    spread = np.sqrt(np.bincount(v_pair, weights=dev * dev, minlength=n) / safe)
    on_side = np.bincount(v_pair, weights=(np.sign(v_margin) == sign[v_pair]) & (sign[v_pair] != 0), minlength=n)
    agreeing = np.bincount(v_pair, weights=v_scores_agree, minlength=n)
    order_means = []
    for in_order in (v_ab, ~v_ab):
        k = np.bincount(v_pair[in_order], minlength=n)
        s = np.bincount(v_pair[in_order], weights=v_margin[in_order], minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            order_means.append(np.where(k > 0, s / np.maximum(k, 1), np.nan))
    ab, ba = order_means
    both = ~np.isnan(ab) & ~np.isnan(ba)
    orders_agree = np.where(both, (np.sign(np.nan_to_num(ab)) == np.sign(np.nan_to_num(ba))).astype(np.int8), -1)
    consistency = (on_side / safe) * (agreeing / safe)
    has_label = ~np.isnan(human_label)
    human = np.where(has_label, (np.sign(np.nan_to_num(human_label)) == sign).astype(np.int8), -1)
    return Confidences(
        margin=np.round(mean, 6), direction=sign, orders_agree=orders_agree.astype(np.int8),
        scores_agree=agreeing == count, spread=np.round(spread, 6), human_agrees=human.astype(np.int8),
        confidence=np.round(np.minimum(1.0, np.abs(mean) / MAX_MARGIN) * consistency, 6), verdicts=count,
        order_margin_ab=ab, order_margin_ba=ba,
    )
