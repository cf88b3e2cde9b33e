"""Certifying a selection's agreement with human preference: the statistics, as pure functions over arrays.

A selection accepts the pairs whose score (a calibrated probability that the judge matches a person, or the
judge's own confidence) is at least a threshold λ. Given labelled calibration pairs that nothing fitted on, the
threshold is chosen by fixed-sequence testing (Angelopoulos et al., "Learn then Test", arXiv 2110.01052; applied
to LLM judges by Jung, Brahman & Choi, "Trust or Escalate", arXiv 2407.18370): walk λ from strict to loose; at
each, K(λ) calibration pairs are accepted and e(λ) of them disagree with their human label; the one-sided
(1 - δ) Clopper-Pearson upper bound on the disagreement rate is the Beta(1 - δ; e + 1, K - e) quantile (the exact
binomial test: for a 0/1 loss it is tighter than Learn then Test's Hoeffding-Bentkus bound); accept λ while the
bound is at most α = 1 - target and stop at the first λ whose bound exceeds it. The loosest accepted λ̂ then
gives P(disagreement among accepted pairs > α) <= δ, for pairs exchangeable with the calibration pairs.

The thresholds are fixed before any calibration label is read: quantiles of the scores of the pairs that are not
calibration pairs (`threshold_grid`), from the strictest at which enough calibration pairs are expected for a
bound to pass, down to accepting every pair.

Judging in rounds (`tasks.curate.certification`) is one selection rule certified once: which pairs a round asks
more of never depends on a calibration label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

GRID_STEPS = 200  # thresholds from the strict start to accepting everything


def disagreement_bound(errors, accepted, risk: float):
    """The one-sided (1 - risk) Clopper-Pearson upper bound on a disagreement rate seen as `errors` of `accepted`
    (arrays or numbers): 1 where nothing is accepted or everything disagrees."""
    # The Beta(e + 1, n - e) quantile is the inverse regularized incomplete beta function; scipy.special alone is
    # imported, and only here: scipy.stats cost a version without a target over a second of start-up.
    from scipy.special import betaincinv

    e = np.asarray(errors, dtype=float)
    n = np.asarray(accepted, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = betaincinv(e + 1.0, np.maximum(n - e, 1e-300), 1.0 - risk)
    bound = np.where((n <= 0) | (e >= n), 1.0, bound)
    return float(bound) if bound.ndim == 0 else bound


def pairs_needed(rate: float, alpha: float, risk: float, limit: int = 10_000_000) -> int | None:
    """How many accepted calibration pairs a disagreement `rate` needs for its bound to reach `alpha` (None: no
    number does, the rate being at least `alpha`)."""
    if rate >= alpha:
        return None

    def passes(n: int) -> bool:
        return disagreement_bound(math.floor(rate * n), n, risk) <= alpha

    high = 1
    while not passes(high):
        high *= 2
        if high > limit:
            return None
    low = high // 2
    while low + 1 < high:  # the bound is not strictly monotone in n at small counts: the smallest n found by
        mid = (low + high) // 2  # bisection between a failing and a passing count is close enough for an estimate
        low, high = (low, mid) if passes(mid) else (mid, high)
    return high


def threshold_grid(reference: np.ndarray, calibration_pairs: int, alpha: float, risk: float,
                   steps: int = GRID_STEPS) -> np.ndarray:
    """Thresholds from strict to loose, fixed before the calibration labels are read. `reference`: the scores of
    pairs that are not calibration pairs (independent of them). The strictest is the reference quantile above which
    enough calibration pairs are expected for a bound to pass at half the allowed disagreement; the loosest
    accepts every pair (-inf)."""
    start = pairs_needed(alpha / 2, alpha, risk) or calibration_pairs
    first = min(1.0, start / max(calibration_pairs, 1))
    coverage = np.linspace(first, 1.0, steps + 1) if first < 1.0 else np.array([1.0])
    finite = np.asarray(reference, dtype=float)
    finite = finite[~np.isnan(finite)]
    if finite.size:
        grid = np.quantile(finite, 1.0 - coverage, method="higher")
    else:  # nothing to place the thresholds by: even steps over the scores' [0, 1]
        grid = 1.0 - coverage
    grid[-1] = -np.inf
    grid = np.minimum.accumulate(grid)  # strict to loose, never back
    keep = np.r_[True, grid[1:] < grid[:-1]]
    return grid[keep]


@dataclass(frozen=True)
class Threshold:
    """One tested threshold: calibration pairs accepted at it, their disagreements, and the bound."""

    threshold: float
    accepted: int
    disagreements: int
    bound: float


@dataclass(frozen=True)
class Certificate:
    """One stage's fixed-sequence test: the loosest threshold that passed (None: the first failed) and every
    threshold tried, in the order tried (the last is the first failure, unless all passed)."""

    risk: float
    alpha: float
    calibration_pairs: int
    tested: tuple[Threshold, ...]

    @property
    def passed(self) -> tuple[Threshold, ...]:
        return tuple(t for t in self.tested if t.bound <= self.alpha)

    @property
    def certified(self) -> Threshold | None:
        return self.passed[-1] if self.passed else None

    @property
    def threshold(self) -> float | None:
        return None if self.certified is None else self.certified.threshold

    @property
    def best_agreement(self) -> float | None:
        """The highest agreement any threshold tried could certify, as 1 - its bound (None: none tried)."""
        return max((1.0 - t.bound for t in self.tested), default=None)


def fixed_sequence(scores: np.ndarray, wrong: np.ndarray, thresholds: np.ndarray, alpha: float,
                   risk: float) -> Certificate:
    """Test `thresholds` (strict to loose) on calibration pairs with `scores` and `wrong` (their label disagrees
    with the judge), stopping at the first whose bound exceeds `alpha`."""
    scores = np.asarray(scores, dtype=float)
    wrong = np.asarray(wrong, dtype=bool)
    order = np.argsort(-scores, kind="stable")
    ranked, errs = scores[order], np.cumsum(wrong[order])
    accepted = np.searchsorted(-ranked, -np.asarray(thresholds, dtype=float), side="right")
    disagreements = np.where(accepted > 0, errs[np.maximum(accepted - 1, 0)] if len(errs) else 0, 0)
    bounds = disagreement_bound(disagreements, accepted, risk)
    bounds = np.atleast_1d(bounds)
    failing = np.flatnonzero(bounds > alpha)
    stop = int(failing[0]) + 1 if failing.size else len(thresholds)
    tested = tuple(Threshold(float(thresholds[i]), int(accepted[i]), int(disagreements[i]), float(bounds[i]))
                   for i in range(stop))
    return Certificate(risk, alpha, len(scores), tested)


@dataclass(frozen=True)
class Shortfall:
    """Why a target cannot be certified, and what would: the best agreement any threshold certified, and about
    how many more labelled pairs the first stage would need at the disagreement it saw there (None: no number,
    the judge disagreeing with people at least 1 - target of the time even where it is most confident)."""

    best_agreement: float | None
    calibration_pairs: int
    more_pairs: int | None
    observed_disagreement: float | None = field(default=None)


def shortfall(certificate: Certificate, share: float = 1.0) -> Shortfall:
    """At the threshold whose observed disagreement is lowest (ties: more pairs), how many accepted calibration
    pairs that rate needs, scaled to calibration pairs by the share accepted there, and to labelled pairs by the
    `share` of labelled pairs that are calibration pairs."""
    tried = [t for t in certificate.tested if t.accepted > 0]
    if not tried:
        return Shortfall(certificate.best_agreement, certificate.calibration_pairs, None)
    best = min(tried, key=lambda t: (t.disagreements / t.accepted, -t.accepted))
    rate = best.disagreements / best.accepted
    needed = pairs_needed(rate, certificate.alpha, certificate.risk)
    if needed is None:
        return Shortfall(certificate.best_agreement, certificate.calibration_pairs, None, rate)
    total = needed * certificate.calibration_pairs / best.accepted
    more = max(1, math.ceil((total - certificate.calibration_pairs) / max(share, 1e-9)))
    return Shortfall(certificate.best_agreement, certificate.calibration_pairs, more, rate)


def loosest_passing(scores: np.ndarray, wrong: np.ndarray, thresholds: np.ndarray, alpha: float,
                    risk: float) -> float | None:
    """The loosest of `thresholds` whose bound passes, each tested on its own (None: none passes). Not a
    certificate (testing every threshold spends the risk once per threshold): an estimate of where one would fall
    that a few errors among the surest pairs do not throw out, for deciding where to spend judgments."""
    cert = fixed_sequence(scores, wrong, thresholds, np.inf, risk)  # every threshold's bound, none failing
    passing = [t.threshold for t in cert.tested if t.bound <= alpha]
    return passing[-1] if passing else None
