"""A judged pool's certification: calibration pairs, scores that never saw a calibration label, escalation decided
without one, and the guarantee over seeded simulated worlds judged in rounds."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.curate.calibration import clear_human_directions
from tasks.curate.certification import (
    MIN_SHIFT_PAIRS,
    CertificationLabels,
    calibration_pairs,
    certification_report,
    certify_pool,
    decisive_verdict,
    first_is_ba,
    holds,
    in_first_order,
    next_rungs,
    position_shift,
)
from tasks.curate.confidence import pool_confidences
from tasks.ingest.sources import known_facts
from tasks.judge.genrm import MAX_MARGIN
from tasks.judge.strategies import parse_strategy
from testing.simulated_worlds import clear_agreement, judge, make_world, pool_of


def confidences(pool):
    return pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)


def source_labels(pool, share=0.5):
    d = clear_human_directions(pool.source, pool.human_label, pool.both_bad, known_facts())
    return CertificationLabels(d, d, "source", share)


def swapped_world(seed=1, n=1500, **kwargs):
    world = make_world(seed, n, **kwargs)
    for i in range(n):
        judge(world, i, "ab", 0)
        judge(world, i, "ba", 0)
    return world


def test_calibration_pairs_are_a_stable_share_of_those_that_can():
    pool = pool_of(swapped_world(n=2000))
    labels = source_labels(pool)
    chosen = calibration_pairs(pool.pair_id, labels)
    assert not (chosen & (labels.calibration == 0)).any()
    assert chosen.sum() / (labels.calibration != 0).sum() == pytest.approx(0.5, abs=0.05)
    # by pair id alone: the same pairs whatever else the pool holds
    again = calibration_pairs(pool.pair_id[::-1], CertificationLabels(labels.calibration[::-1], labels.training[::-1],
                                                                       "source", 0.5))
    assert (again[::-1] == chosen).all()
    with pytest.raises(ValueError):
        CertificationLabels(labels.calibration, labels.training, "guess", 0.5)


def test_scores_and_escalation_never_read_a_calibration_label():
    """Flipping every calibration pair's label changes the certificate, never a score or a round's choice."""
    world = make_world(3, 1500, position_bias=0.3)
    for i in range(1500):
        judge(world, i, "ab", 0)
    pool = pool_of(world)
    c = confidences(pool)
    labels = source_labels(pool)
    flipped = CertificationLabels(-labels.calibration, labels.training, "source", 0.5)
    calibrating = calibration_pairs(pool.pair_id, labels)
    flipped = CertificationLabels(np.where(calibrating, -labels.calibration, labels.calibration),
                                  np.where(calibrating, labels.training, labels.training), "source", 0.5)
    a, b = certify_pool(pool, c, labels, 0.9, 0.05), certify_pool(pool, c, flipped, 0.9, 0.05)
    assert np.array_equal(a.scores.score, b.scores.score, equal_nan=True)
    assert a.threshold != b.threshold  # the labels do decide the threshold
    ladder = parse_strategy("certify").ladder()
    every = np.ones(len(pool), bool)
    assert np.array_equal(next_rungs(pool, c, labels, 0.9, 0.05, every, ladder).rungs,
                          next_rungs(pool, c, flipped, 0.9, 0.05, every, ladder).rungs)


def test_holds_counts_whole_rungs():
    world = make_world(4, 10)
    judge(world, 0, "ab", 0)
    judge(world, 1, "ab", 0)
    judge(world, 1, "ba", 0)
    pool = pool_of(world)
    assert holds(pool, [("ab", 0)])[:3].tolist() == [True, True, False]
    assert holds(pool, [("ab", 0), ("ba", 0)])[:3].tolist() == [False, True, False]


def test_a_ladders_ab_is_each_pairs_first_order():
    """`ab` in a ladder is a pair's first order: the one first-sample order it holds, else the shorter answer shown
    first. A pair whose answer A is the longer holds its first rung with `ba 0`."""
    world = make_world(4, 40)
    longer_a = [i for i, p in enumerate(world.pairs) if len(p.response_a) > len(p.response_b)]
    longer_b = [i for i, p in enumerate(world.pairs) if len(p.response_a) < len(p.response_b)]
    a, a2, a3, b = longer_a[0], longer_a[1], longer_a[2], longer_b[0]
    judge(world, a, "ba", 0)  # its first order
    judge(world, a2, "ab", 0)  # judged before in the other order (say, by `single`): that one is its first
    judge(world, b, "ab", 0)
    judge(world, a3, "ba", 0)
    judge(world, a3, "ab", 0)
    pool = pool_of(world)
    assert first_is_ba(pool)[[a, a2, a3, b]].tolist() == [True, False, True, False]
    assert holds(pool, [("ab", 0)])[[a, a2, a3, b]].tolist() == [True, True, True, True]
    assert holds(pool, [("ab", 0), ("ba", 0)])[[a, a2, a3, b]].tolist() == [False, False, True, False]
    assert not holds(pool, [("ab", 0)])[longer_a[3]]  # nothing judged
    assert in_first_order(pool).tolist() == [v_pair != a3 or not ab for v_pair, ab in
                                             zip(pool.v_pair.tolist(), pool.v_ab.tolist())]
    # the next rung of a pair that holds its first order is the other one, in the order it was not shown
    plan = next_rungs(pool, confidences(pool), source_labels(pool), 0.9, 0.05, np.ones(len(pool), bool),
                      parse_strategy("certify").ladder())
    assert set(plan.rungs[[a, a2, b]].tolist()) <= {-1, 1} and plan.rungs[a3] in (-1, 2)


@pytest.mark.parametrize("bias", [0.0, 0.3, 0.6])
def test_the_judges_position_shift_is_read_from_the_pairs_judged_both_ways(bias):
    """Half the mean gap between a pair's two orders is the margin the stand-in's position bias adds toward the
    answer shown first (to its rounding to a ranking); with none, the orders mirror each other exactly."""
    pool = pool_of(swapped_world(seed=3, n=600, position_bias=bias))
    shift = position_shift(confidences(pool))
    assert shift == pytest.approx(bias, abs=0.08)
    assert shift == 0.0 if bias == 0.0 else shift > 0.0


def test_too_few_pairs_judged_both_ways_say_no_shift():
    """The shift is read over at least MIN_SHIFT_PAIRS pairs judged both ways inside the scale: a pair with an order
    at the scale's end (MAX_MARGIN) cannot show it."""

    def judged_both_ways(gaps: list[tuple[float, float]]):
        n = len(gaps)
        return pool_confidences(n, np.repeat(np.arange(n), 2), np.tile([True, False], n),
                                np.array(gaps, float).ravel(), np.ones(2 * n, bool), np.full(n, np.nan))

    inside, at_end = (1.5, -0.5), (MAX_MARGIN, MAX_MARGIN)
    assert position_shift(judged_both_ways([inside] * (MIN_SHIFT_PAIRS - 1))) == 0.0
    assert position_shift(judged_both_ways([inside] * MIN_SHIFT_PAIRS)) == 1.0
    assert position_shift(judged_both_ways([inside] * MIN_SHIFT_PAIRS + [at_end] * 50)) == 1.0
    assert position_shift(judged_both_ways([inside] * (MIN_SHIFT_PAIRS - 1) + [at_end] * 50)) == 0.0


def test_a_one_order_verdict_is_decisive_once_the_position_shift_is_taken_off():
    """Shift 0.6 toward the answer shown first: a one-order verdict of margin 1.5 for the answer shown first is
    worth 0.9 (not decisive), one for the answer shown second 2.1; a pair judged both ways is read as it stands."""
    # A shown first and chosen; A shown second and chosen; B shown first and chosen; B shown second and chosen;
    # both orders for A; a decisive verdict at 2.5 for the answer shown first
    v_pair = np.array([0, 1, 2, 3, 4, 4, 5])
    v_ab = np.array([True, False, False, True, True, False, True])
    v_margin = np.array([1.5, 1.5, -1.5, -1.5, 2.1, 0.9, 2.5])
    c = pool_confidences(6, v_pair, v_ab, v_margin, np.ones(7, bool), np.full(6, np.nan))
    keep = np.ones(6, bool)
    assert decisive_verdict(c, keep).tolist() == [True] * 6  # no shift: |margin| > 1 everywhere
    assert decisive_verdict(c, keep, 0.6).tolist() == [False, True, False, True, True, True]
    # a judge found to credit the answer shown second discounts the other verdicts instead
    assert decisive_verdict(c, keep, -0.6).tolist() == [True, False, True, False, True, True]
    assert not decisive_verdict(c, ~keep, 0.6).any()


def test_a_certified_version_reports_its_guarantee_and_coverage():
    world = swapped_world(seed=5)
    pool = pool_of(world)
    c = confidences(pool)
    certified = certify_pool(pool, c, source_labels(pool), 0.9, 0.05)
    report = certification_report(certified, judged=len(pool))
    assert report["certified"] and report["labels"] == "source" and report["scored_by"] == "p_correct"
    only = report["populations"]["every pair"]
    assert only["agreement_bound"] >= 0.9 and report["coverage"] == pytest.approx(certified.accepted.mean())
    assert report["estimated_agreement"] >= only["agreement_bound"]  # the held-out pairs' own rate, not the bound
    assert report["calibration_pairs"] == int((calibration_pairs(pool.pair_id, source_labels(pool))
                                               & ~np.isnan(certified.scores.score)).sum())
    curve = report["curve"]
    assert [p["coverage"] for p in curve] == sorted(p["coverage"] for p in curve)  # strict to loose
    assert clear_agreement(world, c.direction, certified.accepted) >= 0.9


def test_a_target_the_labels_cannot_certify_says_what_it_could():
    world = swapped_world(seed=6, human_noise=2.0)
    pool = pool_of(world)
    certified = certify_pool(pool, confidences(pool), source_labels(pool), 0.99, 0.05)
    report = certification_report(certified, judged=len(pool))
    assert not report["certified"] and not certified.accepted.any()
    assert report["shortfall"]["best_agreement"] < 0.99


def _certify_world(seed: int, setting: tuple[float, float, float], target: float) -> float | None:
    position, length, noise = setting
    world = make_world(seed, 1000, human_noise=noise, position_bias=position, length_bias=length)
    ladder = parse_strategy("certify").ladder()
    for i in range(1000):
        judge(world, i, "ab", 0)
    for _ in range(2 * len(ladder)):
        pool = pool_of(world)
        rungs = next_rungs(pool, confidences(pool), source_labels(pool), target, 0.1, np.ones(1000, bool), ladder).rungs
        if not (rungs >= 0).any():
            break
        for i in np.flatnonzero(rungs >= 0):
            for order, sample in ladder[rungs[i]]:
                judge(world, i, order, sample)
    pool = pool_of(world)
    c = confidences(pool)
    certified = certify_pool(pool, c, source_labels(pool), target, 0.1)
    return clear_agreement(world, c.direction, certified.accepted)


def test_the_guarantee_holds_for_rounds_over_seeded_worlds():
    """Judged in rounds by `certify` and certified at risk 0.1: the share of 60 worlds (biased and unbiased judges,
    three rater noise levels) whose kept pairs truly agree less than the target stays within the risk, with its
    95% interval printed."""
    from scipy.stats import beta

    settings = [(0.0, 0.0, 1.2), (0.3, 0.0, 1.2), (0.3, 1.0, 1.6), (0.0, 0.0, 0.8)]
    worlds = 60
    below = 0
    for seed in range(worlds):
        agreement = _certify_world(seed, settings[seed % len(settings)], target=0.93)
        below += agreement is not None and agreement < 0.93
    upper = beta.ppf(0.975, below + 1, worlds - below)
    print(f"{below} of {worlds} worlds below the target (95% interval up to {upper:.3f})")
    assert below / worlds <= 0.1


def _planned(pool, rungs, ladder) -> int:
    return sum(len(ladder[r]) for r in rungs.tolist() if r >= 0)


@pytest.mark.parametrize("position", [0.0, 0.6])
def test_rounds_never_plan_more_judgments_than_swap(position):
    """Whatever the verdicts, the judgments held and the round's plan together stay within swap's two a pair: in
    every round of a world judged in rounds, and when every pair already holds more than its share (nothing left
    to spend)."""
    n = 1000
    world = make_world(8, n, position_bias=position, length_bias=1.0)
    ladder = parse_strategy("certify:3").ladder()
    for i in range(n):
        judge(world, i, "ab", 0)
    every = np.ones(n, bool)
    for _ in range(2 * len(ladder)):
        pool = pool_of(world, one_order_on_purpose=True)
        plan = next_rungs(pool, confidences(pool), source_labels(pool), 0.9, 0.05, every, ladder)
        assert world.requests + _planned(pool, plan.rungs, ladder) <= 2 * n
        if not (plan.rungs >= 0).any():
            break
        for i in np.flatnonzero(plan.rungs >= 0):
            for order, sample in ladder[plan.rungs[i]]:
                judge(world, i, order, sample)
    assert world.requests <= 2 * n
    # half the pairs (the run's, `among`) already hold three samples of ab alone: no budget left for any of them
    spent = make_world(9, 400, position_bias=0.6)
    for i in range(400):
        for sample in range(3 if i % 2 else 1):
            judge(spent, i, "ab", sample)
    pool = pool_of(spent, one_order_on_purpose=True)
    among = np.arange(400) % 2 == 1
    plan = next_rungs(pool, confidences(pool), source_labels(pool), 0.9, 0.05, np.ones(400, bool), ladder,
                      among=among)
    assert not (plan.rungs[among] >= 0).any() and not (plan.rungs[~among] >= 0).any()


def test_with_no_certifiable_threshold_nothing_climbs_past_adaptives_rule():
    """When the training labels certify no threshold at the target, a pair gets at most the other order, and only
    where adaptive would ask it (no decisive verdict); the plan says so, and so does the round's outcome."""
    from tasks.judge.strategies import Adaptive

    n = 1000
    world = make_world(10, n, human_noise=2.0, position_bias=0.6)
    ladder = parse_strategy("certify:3").ladder()
    for i in range(n):
        judge(world, i, "ab", 0)
    pool = pool_of(world, one_order_on_purpose=True)
    c = confidences(pool)
    plan = next_rungs(pool, c, source_labels(pool), 0.995, 0.05, np.ones(n, bool), ladder)
    assert "certify no threshold at 99.5%" in plan.stopped and "no pair climbs past adaptive's rule" in plan.stopped
    adaptive = Adaptive()
    asks = np.array([bool(adaptive.follow_ups({("ab", 0): world.verdicts[(i, "ab", 0)]})) for i in range(n)])
    assert set(plan.rungs.tolist()) <= {-1, 1} and ((plan.rungs == 1) == asks).all() and asks.any()
    for i in np.flatnonzero(plan.rungs == 1):
        judge(world, i, "ba", 0)
    pool = pool_of(world, one_order_on_purpose=True)
    c = confidences(pool)
    again = next_rungs(pool, c, source_labels(pool), 0.995, 0.05, np.ones(n, bool), ladder)
    # no further samples, even for contradicting verdicts; the other order only where a one-order verdict is not
    # decisive once the judge's position shift, now measured on the pairs judged both ways, is taken off it
    shift = position_shift(c)
    assert shift > 0.5 and f"position shift {shift:+.2f}" in again.how and again.stopped
    one_order = np.isnan(c.order_margin_ba)
    assert set(again.rungs.tolist()) <= {-1, 1}
    assert ((again.rungs == 1) == (one_order & ~decisive_verdict(c, np.ones(n, bool), shift))).all()
    assert (again.rungs == 1).any()
    for i in np.flatnonzero(again.rungs == 1):
        judge(world, i, "ba", 0)
    pool = pool_of(world, one_order_on_purpose=True)
    last = next_rungs(pool, confidences(pool), source_labels(pool), 0.995, 0.05, np.ones(n, bool), ladder)
    assert not (last.rungs >= 0).any() and last.stopped
