"""Calibrated confidence: the probability that the judge's direction matches a clear human preference.

Fitted per judge configuration (a version is built from one) on the pairs that carry a clear human label
(|human_label| at least the clear label its source states, as the warehouse stores it with the pairs:
`tasks.ingest.source_facts`; neither a tie nor both-bad), from the
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
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from tasks.curate.confidence import Confidences
from tasks.curate.pool import JudgedPool
from tasks.ingest.source_facts import SourceFacts, facts_in

MIN_LABELLED = 200  # labelled pairs (with at least MIN_PER_CLASS right and wrong) needed to fit at all
MIN_PER_CLASS = 10
MIN_DOMAIN_LABELLED = 50  # a domain's own ECE and Brier are reported from this many labelled pairs up
FOLDS = 5
BINS = 10
MAX_FIT = 100_000  # labelled pairs one model is fitted on (a sample by pair id beyond that): enough for a
# dozen coefficients, and a million-pair version fits in seconds


def clear_human_direction(source: str, human_label: float | None, both_bad: bool,
                          facts: Mapping[str, SourceFacts]) -> str | None:
    """ "a" or "b" when the human preference is clear, else None. `facts`: each source's, as the warehouse stores
    them (`tasks.ingest.sources.warehouse_facts`); a source it holds none for counts one step of the scale clear."""
    if human_label is None or both_bad or (isinstance(human_label, float) and math.isnan(human_label)):
        return None
    if abs(human_label) < facts_in(facts, source).clear_label:
        return None
    return "a" if human_label > 0 else "b"


def clear_human_directions(source: np.ndarray, human_label: np.ndarray, both_bad: np.ndarray,
                           facts: Mapping[str, SourceFacts]) -> np.ndarray:
    """`clear_human_direction` for every pair: int8, 1 A, -1 B, 0 not clear."""
    codes, names = pd.factorize(source)
    threshold = np.array([facts_in(facts, s).clear_label for s in names] or [1.0])[codes]
    label = np.nan_to_num(human_label)
    clear = ~np.isnan(human_label) & ~both_bad & (np.abs(label) >= threshold)
    return np.where(clear, np.sign(label), 0).astype(np.int8)


def evidence(pool: JudgedPool, c: Confidences,
             facts: Mapping[str, SourceFacts]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the pool indices with calibration evidence, their features, whether the judge is right: int8 1 right,
    0 wrong, -1 no clear label). A pair without verdicts or with a judge tie has no direction to be right about."""
    idx = np.flatnonzero((c.verdicts > 0) & (c.direction != 0))
    human = clear_human_directions(pool.source[idx], pool.human_label[idx], pool.both_bad[idx], facts)
    right = np.where(human == 0, -1, (human == c.direction[idx]).astype(np.int8)).astype(np.int8)
    return idx, features_of(c, idx), right


def features_of(c: Confidences, idx: np.ndarray) -> np.ndarray:
    """The judge's signals of pairs `idx` (each with a direction), as the p_correct model reads them."""
    toward = c.direction[idx].astype(float)
    ab, ba = c.order_margin_ab[idx], c.order_margin_ba[idx]
    orders = c.orders_agree[idx]
    return np.column_stack([
        np.abs(c.margin[idx]),
        np.where(np.isnan(ab), 0.0, toward * np.nan_to_num(ab)), (~np.isnan(ab)).astype(float),
        np.where(np.isnan(ba), 0.0, toward * np.nan_to_num(ba)), (~np.isnan(ba)).astype(float),
        (orders == 1).astype(float), (orders == -1).astype(float),
        c.scores_agree[idx].astype(float), c.spread[idx], c.verdicts[idx].astype(float),
    ])


def _fold_hash(pair_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(pair_id.encode(), digest_size=4).digest(), "big")


def _model(domains: int, signals: int = 9):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, SplineTransformer, StandardScaler

    columns = ColumnTransformer([
        ("margin", SplineTransformer(n_knots=6, degree=3, extrapolation="linear"), [0]),
        ("signals", StandardScaler(), list(range(1, 1 + signals))),
        ("domain", OneHotEncoder(categories=[list(range(domains))], handle_unknown="ignore"), [1 + signals]),
    ])
    return make_pipeline(columns, LogisticRegression(C=1.0, max_iter=2000))


def fit_p_correct(pair_ids: np.ndarray, domains: np.ndarray, features: np.ndarray,
                  right: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """(p_correct per item, NaN when none; the calibration report). `right`: int8 1 right, 0 wrong, -1 no
    clear label. Cross-fitted for labelled items; with too few labelled items, no probabilities and a report
    that says why."""
    p = np.full(len(pair_ids), np.nan)
    labelled = np.flatnonzero(right >= 0)
    n_right = int((right == 1).sum())
    if len(labelled) < MIN_LABELLED or min(n_right, len(labelled) - n_right) < MIN_PER_CLASS:
        return p, {"status": "too_few_labelled", "labelled": len(labelled), "judge_right": n_right,
                   "needed": MIN_LABELLED,
                   "note": f"{len(labelled)} pairs carry a clear human label ({n_right} where the judge agrees); "
                           f"p_correct needs at least {MIN_LABELLED} with {MIN_PER_CLASS} of each outcome"}
    domain_codes, domain_names = _domain_codes(domains)
    x = np.column_stack([features, domain_codes.astype(float)])
    y = right[labelled].astype(int)
    hashes = np.array([_fold_hash(pair_ids[i]) for i in labelled], dtype=np.int64)
    folds = hashes % FOLDS
    # a deterministic sample for fitting when there are more labels than a model needs
    sample = hashes % max(1, -(-len(labelled) // MAX_FIT)) == 0
    out_of_fold = np.empty(len(labelled))
    xl = x[labelled]
    for k in range(FOLDS):
        test = folds == k
        train = ~test & sample
        train_y = y[train]
        if not test.any() or not len(train_y):
            continue
        if train_y.min() == train_y.max():  # one outcome only in the other folds: its rate is all we know
            out_of_fold[test] = train_y.mean()
            continue
        out_of_fold[test] = _model(len(domain_names)).fit(xl[train], train_y).predict_proba(xl[test])[:, 1]
    p[labelled] = out_of_fold
    unlabelled = np.flatnonzero(right < 0)
    if len(unlabelled):
        full = _model(len(domain_names)).fit(xl[sample], y[sample])
        p[unlabelled] = full.predict_proba(x[unlabelled])[:, 1]
    report = {"status": "fitted", "method": "logistic regression (scikit-learn), cross-fitted in "
                                            f"{FOLDS} folds by pair id", "labelled": len(labelled),
              **reliability(out_of_fold, y)}
    report["by_domain"] = by_domain(np.asarray(domain_names, dtype=object)[domain_codes[labelled]], out_of_fold, y)
    return p, report


def _domain_codes(domains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return pd.factorize(np.array(["unknown" if d is None or d == "" else d for d in domains], dtype=object),
                        sort=True)


def fit_held_out(pair_ids: np.ndarray, domains: np.ndarray, features: np.ndarray, right: np.ndarray,
                 train: np.ndarray) -> np.ndarray | None:
    """p_correct for every item from one model fitted on the labels of the `train` items alone (`right` 1 or 0
    there): what a certification thresholds, on calibration items the model never saw. None with too few
    training labels (fewer than MIN_LABELLED, or fewer than MIN_PER_CLASS of an outcome)."""
    fit = np.flatnonzero(train & (right >= 0))
    n_right = int((right[fit] == 1).sum())
    if len(fit) < MIN_LABELLED or min(n_right, len(fit) - n_right) < MIN_PER_CLASS:
        return None
    domain_codes, domain_names = _domain_codes(domains)
    x = np.column_stack([features, domain_codes.astype(float)])
    hashes = np.array([_fold_hash(pair_ids[i]) for i in fit], dtype=np.int64)
    fit = fit[hashes % max(1, -(-len(fit) // MAX_FIT)) == 0]  # a deterministic sample beyond MAX_FIT labels
    model = _model(len(domain_names), features.shape[1] - 1).fit(x[fit], right[fit].astype(int))
    return model.predict_proba(x)[:, 1]


def reliability(probabilities, outcomes, bins: int = BINS) -> dict[str, Any]:
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


def by_domain(domains: np.ndarray, probabilities: np.ndarray, outcomes: np.ndarray) -> dict[str, dict[str, Any]]:
    """Each domain's ECE and Brier score with its labelled count; too few labelled pairs say so instead."""
    out = {}
    for domain in sorted(set(domains.tolist())):
        members = domains == domain
        count = int(members.sum())
        if count < MIN_DOMAIN_LABELLED:
            out[domain] = {"labelled": count, "ece": None, "brier": None,
                           "note": f"too few labelled pairs (< {MIN_DOMAIN_LABELLED})"}
            continue
        r = reliability(probabilities[members], outcomes[members])
        out[domain] = {"labelled": count, "ece": r["ece"], "brier": r["brier"]}
    return out


def calibrate(pool: JudgedPool, c: Confidences, facts: Mapping[str, SourceFacts]) -> tuple[np.ndarray, dict[str, Any]]:
    """p_correct for every pair of the pool (NaN where there is none) and the calibration report."""
    idx, features, right = evidence(pool, c, facts)
    p = np.full(len(pool), np.nan)
    fitted, report = fit_p_correct(pool.pair_id[idx], pool.domain[idx], features, right)
    p[idx] = fitted
    return p, report
