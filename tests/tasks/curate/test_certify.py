"""The statistics of a certified selection: the bound, the thresholds, the fixed-sequence test, and its guarantee
checked as statistics are, over many seeded worlds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tasks.curate.certify import (
    disagreement_bound,
    fixed_sequence,
    loosest_passing,
    pairs_needed,
    shortfall,
    threshold_grid,
)


def test_the_bound_is_clopper_pearson():
    # no disagreement among n: the bound solves (1 - b)^n = risk
    for n in (1, 10, 29, 300):
        assert disagreement_bound(0, n, 0.05) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-9)
    # the exact binomial test: at the bound, seeing e or fewer has probability risk
    from scipy.stats import binom

    b = disagreement_bound(7, 120, 0.05)
    assert binom.cdf(7, 120, b) == pytest.approx(0.05, rel=1e-6)
    assert disagreement_bound(0, 0, 0.05) == 1.0 and disagreement_bound(5, 5, 0.05) == 1.0
    bounds = disagreement_bound(np.array([0, 1, 2]), np.array([50, 50, 50]), 0.05)
    assert list(bounds) == sorted(bounds)


def test_pairs_needed_is_the_smallest_count_that_passes():
    assert pairs_needed(0.0, 0.1, 0.05) == math.ceil(math.log(0.05) / math.log(0.9))
    n = pairs_needed(0.05, 0.1, 0.05)
    assert disagreement_bound(math.floor(0.05 * n), n, 0.05) <= 0.1
    assert pairs_needed(0.1, 0.1, 0.05) is None and pairs_needed(0.2, 0.1, 0.05) is None


def test_the_grid_runs_strict_to_loose_and_ends_accepting_everything():
    reference = np.random.default_rng(0).random(5000)
    grid = threshold_grid(reference, 1000, 0.1, 0.05)
    assert np.all(np.diff(grid) < 0) and grid[-1] == -np.inf
    # the strictest threshold leaves about enough calibration pairs above it for a bound to pass at alpha / 2
    expected_above = (reference >= grid[0]).mean() * 1000
    assert expected_above == pytest.approx(pairs_needed(0.05, 0.1, 0.05), rel=0.05)
    assert list(threshold_grid(reference, 10, 0.1, 0.05)) == [-np.inf]  # too few to place a strict start
    assert threshold_grid(np.array([]), 1000, 0.1, 0.05)[-1] == -np.inf


def test_fixed_sequence_stops_at_the_first_failure():
    scores = np.array([0.99, 0.98, 0.97, 0.96, 0.5, 0.4, 0.3, 0.2] * 20)
    wrong = np.array([False, False, False, False, True, True, False, True] * 20)
    result = fixed_sequence(scores, wrong, np.array([0.95, 0.45, 0.35, -np.inf]), alpha=0.1, risk=0.05)
    assert result.threshold == 0.95
    assert [t.accepted for t in result.tested] == [80, 100]  # the second threshold failed: nothing after it
    assert result.certified.disagreements == 0 and result.certified.bound <= 0.1
    assert result.tested[-1].bound > 0.1
    nothing = fixed_sequence(scores, np.ones(len(scores), bool), np.array([0.95]), alpha=0.1, risk=0.05)
    assert nothing.threshold is None and nothing.certified is None


def test_loosest_passing_is_not_thrown_out_by_errors_among_the_surest():
    """An estimate for where to spend judgments: the fixed sequence stops at a strict threshold whose few pairs hold
    an error; each threshold tested on its own, a looser one still passes."""
    scores = np.r_[np.full(5, 0.99), np.full(300, 0.9), np.full(100, 0.3)]
    wrong = np.r_[[True, False, False, False, False], np.zeros(300, bool), np.ones(100, bool)]
    grid = np.array([0.95, 0.5, -np.inf])
    assert fixed_sequence(scores, wrong, grid, alpha=0.1, risk=0.05).threshold is None
    assert loosest_passing(scores, wrong, grid, alpha=0.1, risk=0.05) == 0.5
    assert loosest_passing(scores, np.ones(len(scores), bool), grid, alpha=0.1, risk=0.05) is None


def _toy_world(seed: int, slope: float, n_cal: int = 400) -> tuple[float | None, float]:
    """Scores uniform on [0, 1], a pair wrong with probability slope * (1 - score): the accepted pairs' true
    disagreement at threshold t is slope * (1 - t) / 2."""
    rng = np.random.default_rng(seed)
    s = rng.random(n_cal)
    wrong = rng.random(n_cal) < slope * (1 - s)
    grid = threshold_grid(rng.random(4000), n_cal, 0.1, 0.1)
    t = fixed_sequence(s, wrong, grid, 0.1, 0.1).threshold
    return t, (slope * (1 - max(t, 0.0)) / 2 if t is not None else 0.0)


@pytest.mark.parametrize("slope", [0.25, 0.4])
def test_the_guarantee_holds_over_many_seeded_worlds(slope):
    """P(true disagreement of the accepted pairs > alpha) <= delta: the share of 1,000 worlds that break it, with
    its 95% Clopper-Pearson interval, stays under delta = 0.1."""
    from scipy.stats import beta

    worlds = 1000
    broken = sum(_toy_world(seed, slope)[1] > 0.1 for seed in range(worlds))
    upper = beta.ppf(0.975, broken + 1, worlds - broken)
    print(f"slope {slope}: {broken} of {worlds} worlds over alpha ({broken / worlds:.3f}, 95% interval up to {upper:.3f})")
    assert upper < 0.1 + 0.02  # the interval's top end is within noise of delta, and the share itself below it
    assert broken / worlds <= 0.1


def test_shortfall_says_how_many_more_labels():
    scores = np.linspace(1, 0, 200)
    wrong = np.zeros(200, bool)
    wrong[::12] = True  # about 8% everywhere: passes 10% with enough pairs, not with 200
    grid = threshold_grid(np.linspace(1, 0, 1000), 200, 0.1, 0.05)
    result = fixed_sequence(scores, wrong, grid, 0.1, 0.05)
    assert result.threshold is None
    short = shortfall(result, share=0.5)
    # at about 8% disagreement some 1,000 accepted pairs pass; from 200 calibration pairs, half of the labels
    assert 1000 < short.more_pairs < 20_000
    assert short.best_agreement < 0.9 and short.observed_disagreement == pytest.approx(0.08, abs=0.01)
    hopeless = fixed_sequence(scores, np.ones(200, bool), grid, 0.1, 0.05)
    assert shortfall(hopeless).more_pairs is None
