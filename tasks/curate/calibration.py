"""Calibrated confidence: the probability that the judge's direction matches a clear human preference.

Fitted per judge configuration (a version is built from one) on the pairs that carry a clear human label
(HelpSteer3 |overall_preference| >= 2; arena-style votes that are neither ties nor both-bad), from the
judge's own signals: |mean margin| (a spline: the relation is not linear), the margin in each order toward
the chosen side, order and score agreement, the spread across samples, how many verdicts, and the domain.
The model is scikit-learn's logistic regression, cross-fitted: a labelled pair's probability comes from a
model fitted on the other folds only, so no pair is scored by a model that saw its label. Unlabelled pairs
are scored by the model fitted on all labelled pairs.

Reliability is measured on those out-of-fold probabilities: a reliability diagram (10 equal-width bins),
the expected calibration error (ECE) and the Brier score, overall and per domain, each with the number of
labelled pairs behind it. With too few labelled pairs there is no model and no probability, and the report
says so.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tasks.curate.confidence import Confidence

MIN_LABELLED = 200  # labelled pairs (with at least MIN_PER_CLASS right and wrong) needed to fit at all
MIN_PER_CLASS = 10
MIN_DOMAIN_LABELLED = 50  # a domain's own ECE and Brier are reported from this many labelled pairs up
FOLDS = 5
BINS = 10
MAX_FIT = 100_000  # labelled pairs one model is fitted on (a sample by pair id beyond that): enough for a
# dozen coefficients, and a million-pair version fits in seconds
CLEAR_LABEL = {"helpsteer3": 2.0}  # |human_label| a preference must reach to count as clear; others: 1


@dataclass(frozen=True, slots=True)
class Evidence:
    """What calibration knows of one judged pair: the judge's signals and, when clear, the human's verdict."""

    pair_id: str
    domain: str
    features: tuple[float, ...]
    judge_right: bool | None  # the judge's direction matches a clear human preference (None: no clear label)


def clear_human_direction(source: str, human_label: float | None, both_bad: bool) -> str | None:
    """ "a" or "b" when the human preference is clear, else None."""
    if human_label is None or both_bad or (isinstance(human_label, float) and math.isnan(human_label)):
        return None
    if abs(human_label) < CLEAR_LABEL.get(source, 1.0):
        return None
    return "a" if human_label > 0 else "b"


def evidence(pair_id: str, source: str, domain: str | None, human_label: float | None, both_bad: bool,
             c: Confidence, order_margins: dict[str, float]) -> Evidence | None:
    """The calibration evidence of a judged pair (None for a judge tie: there is no direction to be right
    about). `order_margins`: mean margin on A's side per order judged."""
    if c.direction == "tie":
        return None
    toward = 1.0 if c.direction == "a" else -1.0
    ab, ba = order_margins.get("ab"), order_margins.get("ba")
    features = (
        abs(c.margin),
        toward * ab if ab is not None else 0.0, float(ab is not None),
        toward * ba if ba is not None else 0.0, float(ba is not None),
        1.0 if c.orders_agree else 0.0, float(c.orders_agree is None),
        float(c.scores_agree), c.spread, float(c.verdicts),
    )
    human = clear_human_direction(source, human_label, both_bad)
    return Evidence(pair_id, domain or "unknown", features, None if human is None else human == c.direction)


def _fold_hash(pair_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(pair_id.encode(), digest_size=4).digest(), "big")


def _fold(pair_id: str) -> int:
    return _fold_hash(pair_id) % FOLDS


def _model(domains: list[str]):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, SplineTransformer, StandardScaler

    columns = ColumnTransformer([
        ("margin", SplineTransformer(n_knots=6, degree=3, extrapolation="linear"), [0]),
        ("signals", StandardScaler(), list(range(1, 10))),
        ("domain", OneHotEncoder(categories=[sorted(set(domains))], handle_unknown="ignore"), [10]),
    ])
    return make_pipeline(columns, LogisticRegression(C=1.0, max_iter=2000))


def _matrix(items: list[Evidence]) -> np.ndarray:
    rows = np.empty((len(items), 11), dtype=object)
    for i, e in enumerate(items):
        rows[i, :10] = e.features
        rows[i, 10] = e.domain
    return rows


def fit_p_correct(items: list[Evidence]) -> tuple[dict[str, float], dict[str, Any]]:
    """({pair id: p_correct}, calibration report). Cross-fitted for labelled pairs; with too few labelled
    pairs, no probabilities and a report that says why."""
    labelled = [e for e in items if e.judge_right is not None]
    right = sum(e.judge_right for e in labelled)
    if len(labelled) < MIN_LABELLED or min(right, len(labelled) - right) < MIN_PER_CLASS:
        return {}, {"status": "too_few_labelled", "labelled": len(labelled), "judge_right": right,
                    "needed": MIN_LABELLED,
                    "note": f"{len(labelled)} pairs carry a clear human label ({right} where the judge agrees); "
                            f"p_correct needs at least {MIN_LABELLED} with {MIN_PER_CLASS} of each outcome"}
    domains = [e.domain for e in items]
    x, y = _matrix(labelled), np.array([e.judge_right for e in labelled], dtype=int)
    folds = np.array([_fold(e.pair_id) for e in labelled])
    out_of_fold = np.empty(len(labelled))
    # a deterministic sample for fitting when there are more labels than a model needs
    sample = np.array([_fold_hash(e.pair_id) % max(1, -(-len(labelled) // MAX_FIT)) == 0 for e in labelled])
    for k in range(FOLDS):
        test = folds == k
        train = ~test & sample
        train_y = y[train]
        if not test.any() or not len(train_y):
            continue
        if train_y.min() == train_y.max():  # one outcome only in the other folds: its rate is all we know
            out_of_fold[test] = train_y.mean()
            continue
        out_of_fold[test] = _model(domains).fit(x[train], train_y).predict_proba(x[test])[:, 1]
    p = {e.pair_id: float(out_of_fold[i]) for i, e in enumerate(labelled)}
    unlabelled = [e for e in items if e.judge_right is None]
    if unlabelled:
        full = _model(domains).fit(x[sample], y[sample])
        p.update(zip((e.pair_id for e in unlabelled), full.predict_proba(_matrix(unlabelled))[:, 1].tolist()))
    report = {"status": "fitted", "method": "logistic regression (scikit-learn), cross-fitted in "
                                            f"{FOLDS} folds by pair id", "labelled": len(labelled),
              **reliability(out_of_fold.tolist(), y.tolist())}
    report["by_domain"] = by_domain(labelled, out_of_fold.tolist())
    return p, report


def reliability(probabilities: list[float], outcomes: list[int], bins: int = BINS) -> dict[str, Any]:
    """ECE, Brier score and the reliability diagram's bins (mean predicted, observed rate, count)."""
    n = len(probabilities)
    if n == 0:
        return {"ece": None, "brier": None, "bins": []}
    p, y = np.asarray(probabilities, dtype=float), np.asarray(outcomes, dtype=float)
    index = np.minimum((p * bins).astype(int), bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        members = index == b
        count = int(members.sum())
        if not count:
            continue
        predicted, observed = float(p[members].mean()), float(y[members].mean())
        ece += count / n * abs(observed - predicted)
        table.append({"low": b / bins, "high": (b + 1) / bins, "predicted": round(predicted, 4),
                      "observed": round(observed, 4), "count": count})
    return {"ece": round(ece, 4), "brier": round(float(((p - y) ** 2).mean()), 4), "bins": table}


def by_domain(labelled: list[Evidence], probabilities: list[float]) -> dict[str, dict[str, Any]]:
    """Each domain's ECE and Brier score with its labelled count; too few labelled pairs say so instead."""
    groups: dict[str, list[int]] = {}
    for i, e in enumerate(labelled):
        groups.setdefault(e.domain, []).append(i)
    out = {}
    for domain, members in sorted(groups.items()):
        if len(members) < MIN_DOMAIN_LABELLED:
            out[domain] = {"labelled": len(members), "ece": None, "brier": None,
                           "note": f"too few labelled pairs (< {MIN_DOMAIN_LABELLED})"}
            continue
        r = reliability([probabilities[i] for i in members], [int(labelled[i].judge_right) for i in members])
        out[domain] = {"labelled": len(members), "ece": r["ece"], "brier": r["brier"]}
    return out


def order_margins(verdicts: list[tuple[str, Any]]) -> dict[str, float]:
    """Mean margin on A's side per order judged."""
    by_order: dict[str, list[float]] = {}
    for order, v in verdicts:
        by_order.setdefault(order, []).append(v.margin)
    return {order: sum(ms) / len(ms) for order, ms in by_order.items()}


def calibrate(pairs: list[Any], confidences: dict[str, Confidence] | None = None) -> tuple[dict[str, float], dict[str, Any]]:
    """p_correct for judged pairs (`select.JudgedPair`s) and the calibration report. `confidences`: each
    pair's `pair_confidence`, when the caller has them already."""
    from tasks.curate.confidence import pair_confidence

    items = []
    for pair in pairs:
        if not pair.verdicts:
            continue
        c = confidences[pair.pair_id] if confidences else pair_confidence(pair.verdicts, pair.human_label)
        e = evidence(pair.pair_id, pair.source, pair.domain, pair.human_label, pair.both_bad, c,
                     order_margins(pair.verdicts))
        if e is not None:
            items.append(e)
    return fit_p_correct(items)
