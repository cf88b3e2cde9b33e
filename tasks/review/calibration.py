"""Reviewed pairs as calibration labels, reported apart from the sources' own.

A reviewed pair's label is its reviewers' outcome: a majority for A or B is a clear human label (the judge is
right when its direction matches it); a reviewed tie, both-bad or split is not, and it also sets aside the
source's label of that pair (two humans then disagree on it). Every other pair keeps its source's clear label
(HelpSteer3 |overall_preference| >= 2, arena-style votes). The model is fitted once on both kinds; the report
gives each kind's count, how often the judge matched it, and its ECE and Brier on the out-of-fold
probabilities.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tasks.curate.calibration import evidence, fit_p_correct, reliability
from tasks.curate.confidence import Confidences
from tasks.curate.pool import JudgedPool
from tasks.ingest.source_facts import SourceFacts
from tasks.review.overrides import PoolReviews

LABEL_SOURCES = ("source", "review")


def reviewed_right(right: np.ndarray, judge: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Whether the judge is right per pair (int8 1 right, 0 wrong, -1 no clear label), the reviews replacing
    the sources' labels where there are any. `judge`: direction (1 A, -1 B); `outcome`: review CODES."""
    decided = np.isin(outcome, (1, -1))
    return np.where(outcome == 0, right, np.where(decided, (outcome == judge).astype(np.int8), -1)).astype(np.int8)


def by_label_source(probabilities: np.ndarray, right: np.ndarray, reviewed: np.ndarray, fitted: bool) -> dict[str, Any]:
    """Per kind of label: labelled pairs, judge right, and (when a model was fitted) ECE and Brier."""
    out = {}
    for name, members in (("source", ~reviewed), ("review", reviewed)):
        m = members & (right >= 0)
        entry: dict[str, Any] = {"labelled": int(m.sum()), "judge_right": int((right[m] == 1).sum())}
        if fitted and m.any():
            r = reliability(probabilities[m], right[m])
            entry.update(ece=r["ece"], brier=r["brier"])
        out[name] = entry
    return out


def calibrate_with_reviews(pool: JudgedPool, c: Confidences, reviews: PoolReviews,
                           facts: Mapping[str, SourceFacts]) -> tuple[np.ndarray, dict[str, Any]]:
    """`tasks.curate.calibration.calibrate` with reviewed pairs as labels: p_correct for every pair of the pool
    (NaN where there is none) and the report, with `label_sources`. `c`: the judge's own confidences; `facts`:
    each source's, as the warehouse stores them."""
    idx, features, right = evidence(pool, c, facts)
    right = reviewed_right(right, c.direction[idx], reviews.outcome[idx])
    p = np.full(len(pool), np.nan)
    fitted, report = fit_p_correct(pool.pair_id[idx], pool.domain[idx], features, right)
    p[idx] = fitted
    report["label_sources"] = by_label_source(fitted, right, reviews.reviewed[idx], report.get("status") == "fitted")
    return p, report
