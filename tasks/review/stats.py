"""A version's "review" statistics: what the reviews did to it and how often reviewers agree with the judge,
per selection (the audit sample's figure is the unbiased one), with 95% Wilson intervals."""

from __future__ import annotations

from typing import Any

import numpy as np

from tasks.curate.bias import audit
from tasks.curate.confidence import Confidences
from tasks.curate.pool import JudgedPool
from tasks.curate.select import preferences
from tasks.review.agreement import agreement
from tasks.review.majority import CODES
from tasks.review.overrides import PoolReviews
from tasks.review.select import SELECTIONS


def review_stats(judge: Confidences, reviews: PoolReviews, kept: np.ndarray, overrides: bool) -> dict[str, Any]:
    """`judge`: the judge's own confidences over the pool; `kept`: the version's pool indices."""
    reviewed = reviews.reviewed & (judge.verdicts > 0)
    outcome, direction = reviews.outcome, judge.direction
    decided = reviewed & reviews.decided
    in_version = np.zeros(len(outcome), bool)
    in_version[kept] = True
    stats: dict[str, Any] = {
        "review_overrides": overrides,
        "reviewed_pairs": int(reviewed.sum()),
        "outcomes": {name: int((reviewed & (outcome == code)).sum()) for name, code in CODES.items()},
        "judge_confirmed": int((decided & (outcome == direction)).sum()),
        "judge_overridden": int((decided & (outcome != direction)).sum()),
        "kept_reviewed": int((decided & in_version).sum()),
        "kept_overridden": int((decided & in_version & (outcome != direction)).sum()) if overrides else 0,
        "all_reviewed": agreement(direction[reviewed], outcome[reviewed]),
    }
    for selection in SELECTIONS:
        members = reviews.selected[selection] & (judge.verdicts > 0)
        entry = agreement(direction[members & reviewed], outcome[members & reviewed])
        stats[selection] = {"selected": int(members.sum()), **entry}
    stats["audit"]["note"] = ("a uniform sample of the judged pool it was drawn from: an unbiased estimate of how "
                              "often the judge agrees with reviewers")
    return stats


def with_reviews(stats: dict[str, Any], pool: JudgedPool, judge: Confidences, decided: Confidences,
                 reviews: PoolReviews, kept: np.ndarray, overrides: bool) -> dict[str, Any]:
    """A version's statistics (computed on the judge's own directions) with its `review` section, and the kept
    rows' bias audit on the sides the rows hold (the reviewers' where they overrode the judge)."""
    out = {**stats, "review": review_stats(judge, reviews, kept, overrides)}
    if overrides and reviews.decided.any() and "bias" in stats:
        out["bias"] = {**stats["bias"], "kept": audit(preferences(pool, decided, kept))}
    return out
