"""What a version does with the reviews (policy `review_overrides`, on by default).

A pair its reviewers decided (a majority for A or B) is decided by them: its chosen side is theirs, whatever
the judge said, and the judge's own filters (margin, confidence, p_correct, order and score agreement,
spread, the source's human label, its ties and both-bad flag) do not apply to it. A reviewed tie, both-bad or
split drops it (`reviewed_tie`, `reviewed_both_bad`, `reviewed_split`). What the reviews cannot change: a pair
without verdicts under the version's judge configuration, or a contaminated one, stays out; caps and bias
controls treat reviewed pairs like the others. A kept row keeps the judge's numbers (its `margin` is the
judge's margin from the chosen side: negative where the reviewers overrode the judge).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from common.reasons import Dropped
from tasks.curate.confidence import Confidences
from tasks.review.majority import CODES
from tasks.review.select import SELECTIONS

REVIEW_REASONS = (Dropped.REVIEWED_TIE, Dropped.REVIEWED_BOTH_BAD, Dropped.REVIEWED_SPLIT)
# drop reasons a review does not lift: the pair cannot be a row of this version at all
_STANDING = (Dropped.NOT_JUDGED, Dropped.CONTAMINATED, Dropped.PERSONAL_DATA)


@dataclass(frozen=True)
class PoolReviews:
    """The reviews of a judged pool, aligned with it (one entry per pair, in the pool's order)."""

    outcome: np.ndarray  # int8 CODES, 0 unreviewed
    reviewers: np.ndarray  # int64
    selected: dict[str, np.ndarray]  # selection -> bool: selected for it in some project
    voters: dict[int, frozenset[str]] = field(default_factory=dict)  # pool index -> the reviewers whose votes count

    @classmethod
    def none(cls, n: int) -> PoolReviews:
        return cls(np.zeros(n, np.int8), np.zeros(n, np.int64), {s: np.zeros(n, bool) for s in SELECTIONS}, {})

    @classmethod
    def align(cls, pair_ids: np.ndarray, outcomes: pa.Table, selections: pa.Table,
              voters: pa.Table | None = None) -> PoolReviews:
        """From the warehouse's `review_outcomes`, `review_selections` and `review_voters`; pairs outside the pool
        are ignored."""
        at = {p: i for i, p in enumerate(pair_ids)}
        out = cls.none(len(pair_ids))
        if voters is not None:
            who: dict[int, set[str]] = {}
            for pair, reviewer in zip(*(voters.column(c).to_pylist() for c in ("pair_id", "reviewer"))):
                i = at.get(pair)
                if i is not None:
                    who.setdefault(i, set()).add(reviewer)
            out.voters.update({i: frozenset(r) for i, r in who.items()})
        columns = (outcomes.column(c).to_pylist() for c in ("pair_id", "outcome", "reviewers"))
        for pair, outcome, reviewers in zip(*columns):
            i = at.get(pair)
            if i is not None:
                out.outcome[i], out.reviewers[i] = CODES[outcome], reviewers
        for pair, selection in zip(*(selections.column(c).to_pylist() for c in ("pair_id", "selection"))):
            i = at.get(pair)
            if i is not None and selection in out.selected:
                out.selected[selection][i] = True
        return out

    @property
    def reviewed(self) -> np.ndarray:
        return self.outcome != 0

    @property
    def decided(self) -> np.ndarray:
        """Reviewers chose a side (A: 1, B: -1 in `outcome`)."""
        return np.isin(self.outcome, (CODES["a"], CODES["b"]))

    def direction(self) -> np.ndarray:
        """The reviewers' direction per pair as Confidences code it (1 A, -1 B), 0 where they chose none."""
        return np.where(self.decided, self.outcome, 0).astype(np.int8)

    def decide(self, c: Confidences) -> Confidences:
        """`c` with the reviewers' direction wherever they decided the pair."""
        return replace(c, direction=np.where(self.decided, self.outcome, c.direction).astype(np.int8))

    def drop_codes(self, codes: np.ndarray, reasons: tuple[str, ...]) -> np.ndarray:
        """The policy's drop codes (index into `reasons` plus one, 0 kept) with the reviews applied."""
        standing = np.isin(codes, [reasons.index(r) + 1 for r in _STANDING])
        out = codes.copy()
        free = self.reviewed & ~standing
        out[free & self.decided] = 0
        for reason, code in zip(REVIEW_REASONS, ("tie", "both_bad", "split")):
            out[free & (self.outcome == CODES[code])] = reasons.index(reason) + 1
        return out


def under_policy(reviews: PoolReviews, c: Confidences, overrides: bool) -> tuple[Confidences, PoolReviews | None]:
    """(the confidences a version selects and writes rows with, the reviews its selection applies): with
    `review_overrides` off, the judge's own and none."""
    return (reviews.decide(c), reviews) if overrides else (c, None)


def decided_by_reviewers(reviews: PoolReviews | None) -> np.ndarray | None:
    """Per pair, how many reviewers decided it (chose A or B by a majority), 0 where they did not; None when the
    version applies no reviews (`under_policy`). A version's rows store it with the reviewers' choice."""
    if reviews is None or not reviews.decided.any():
        return None
    return np.where(reviews.decided, reviews.reviewers, 0).astype(np.int64)
