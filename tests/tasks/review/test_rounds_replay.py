"""The estimate's replay of the rounds' rule (`tasks.review.rounds.replayed_shares`): how many of a run's new pairs
are expected to climb to each rung, from the pairs judged before, never from a calibration label."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tasks.curate.certification import CertificationLabels, calibration_pairs
from tasks.curate.ladder import with_reward_model
from tasks.curate.policy import make_policy
from tasks.judge.strategies import parse_strategy
from tasks.review.rounds import MIN_REPLAYED, first_decision, replayed_shares, round_plan
from testing.simulated_worlds import judge, make_world
from tests.tasks.curate.test_certification import confidences, source_labels
from tests.tasks.curate.test_ladder import ladder_pool

LADDER = parse_strategy("ladder").ladder()
POLICY = make_policy({"target_agreement": 0.9})


def _judged_in_rounds(world, among: np.ndarray) -> None:
    """The GenRM's rounds over the pairs `among`, as a run judges them (the rounds' rule, each round refitted)."""
    for _ in range(2 * len(LADDER) - 1):
        pool, c = ladder_pool(world)
        rungs = round_plan(pool, c, source_labels(pool), POLICY, LADDER, among).rungs
        if not (rungs >= 0).any():
            return
        for i in np.flatnonzero(rungs >= 0):
            for order, sample in LADDER[rungs[i]]:
                judge(world, int(i), order, sample)


def test_the_replay_expects_about_the_share_a_run_then_sends():
    """Earlier pairs judged on the ladder; the replay's share for the next pairs against the share the rounds' rule
    then sends to the GenRM's first order in the run's first decision, in several seeded worlds."""
    off = []
    for seed in range(4):
        world = make_world(300 + seed, 3000)
        earlier = np.arange(3000) < 2000
        _judged_in_rounds(world, earlier)
        pool, c = ladder_pool(world)
        # before the run, the reward model has scored the earlier pairs alone
        before = replace(pool, rm_margin=np.where(earlier, pool.rm_margin, np.nan))
        shares = replayed_shares(before, source_labels(before), POLICY, LADDER, 1000)
        assert shares is not None and 0.0 < shares[0] < 1.0 and shares[0] >= shares[1] >= shares[2]
        sent = round_plan(pool, c, source_labels(pool), POLICY, LADDER, ~earlier).rungs[~earlier]
        off.append(shares[0] / np.mean(sent == 1))
    assert all(0.75 < x < 1.33 for x in off), off  # seen: 1.02 to 1.11


def test_the_third_rung_is_replayed_too_not_read_off_an_earlier_run_that_sent_every_pair_on():
    """An earlier run whose rule had fitted no model yet sends every pair on to both GenRM orders; a run after it,
    with the model, sends the other order to few. The third rung's expected share is replayed (the copies sent to
    the second, stripped to the first two rungs), not read off the earlier pairs (there: all of them)."""
    n = 1500
    expected, sent, firsts = [], [], []
    for seed in range(4):
        world = make_world(300 + seed, 2 * n)
        earlier = np.arange(2 * n) < n
        for i in np.flatnonzero(earlier):
            judge(world, int(i), "ab", 0)
            judge(world, int(i), "ba", 0)
        pool, c = ladder_pool(world)
        before = replace(pool, rm_margin=np.where(earlier, pool.rm_margin, np.nan))
        shares = replayed_shares(before, source_labels(before), POLICY, LADDER, n)
        rungs = round_plan(pool, c, source_labels(pool), POLICY, LADDER, ~earlier).rungs
        for i in np.flatnonzero((rungs == 1) & ~earlier):
            judge(world, int(i), "ab", 0)
        pool, c = ladder_pool(world)
        then = round_plan(pool, c, source_labels(pool), POLICY, LADDER, ~earlier).rungs
        firsts.append(shares[0] * n)
        expected.append(shares[1] * n)
        sent.append(int(((then == 2) & ~earlier).sum()))
    print(f"third rung expected {[round(x) for x in expected]}, sent {sent}; second expected {[round(x) for x in firsts]}")
    assert sum(expected) <= 0.1 * sum(firsts)  # the earlier pairs' own ratio would expect as many as the second's
    assert abs(sum(expected) - sum(sent)) <= 0.05 * len(sent) * n


def test_pairs_a_run_stopped_within_the_reward_models_rung_are_decided_beside_the_new_ones():
    """A run stopped at its budget part-way through the reward model's rung: its rerun scores the rest, then decides
    on every pair at once, with the training labels the new pairs bring. The estimate decides the scored pairs
    the same way, beside the replayed new ones, not on the pool as it stands (whose fewer labels make the reward
    model's stricter threshold stricter still, so that more pairs climb). Over seeded worlds, the expected count
    against what the rounds' rule then sends: unbiased, and closer than deciding them on the pool as it stands
    (over 16 worlds: mean 0.995 against 1.119 after 900 of 3,000 pairs were scored, 1.059 against 1.304 after
    500)."""
    n, k = 3000, 700
    beside, alone = [], []
    for seed in range(8):
        world = make_world(400 + seed, n)
        scored = np.arange(n) < k  # the reward model scored these; the GenRM nothing yet
        pool, c = ladder_pool(world)
        sent = int((round_plan(pool, c, source_labels(pool), POLICY, LADDER, np.ones(n, bool)).rungs == 1).sum())
        before = replace(pool, rm_margin=np.where(scored, pool.rm_margin, np.nan))
        decided = first_decision(before, source_labels(before), POLICY, LADDER, n - k, scored)
        assert decided is not None
        shares, climbing = decided
        beside.append((climbing + shares[0] * (n - k)) / sent)
        now = with_reward_model(before, confidences(before))
        climbing_now = int((round_plan(before, now, source_labels(before), POLICY, LADDER, scored).rungs == 1).sum())
        alone.append((climbing_now + shares[0] * (n - k)) / sent)
    print(f"expected / sent, decided beside the new pairs: {[round(x, 3) for x in beside]}; "
          f"on the pool as it stands: {[round(x, 3) for x in alone]}")
    assert 0.9 < np.mean(beside) < 1.1, beside
    assert np.mean(np.abs(np.array(beside) - 1)) < np.mean(np.abs(np.array(alone) - 1)), (beside, alone)


def test_the_replay_never_reads_a_calibration_label_and_needs_earlier_pairs():
    world = make_world(41, 1500)
    pool, _ = ladder_pool(world)
    labels = source_labels(pool)
    calibrating = calibration_pairs(pool.pair_id, labels)
    flipped = CertificationLabels(np.where(calibrating, -labels.calibration, labels.calibration), labels.training,
                                  "source", labels.share)
    for i in range(600):
        judge(world, i, "ab", 0)
    pool, _ = ladder_pool(world)
    assert replayed_shares(pool, labels, POLICY, LADDER, 500) == replayed_shares(pool, flipped, POLICY, LADDER, 500)
    few = make_world(42, MIN_REPLAYED - 1)
    few_pool, _ = ladder_pool(few)
    assert replayed_shares(few_pool, source_labels(few_pool), POLICY, LADDER, 500) is None


def test_once_the_reward_model_scored_every_pending_pair_its_first_rung_is_the_rules_own_decision():
    """A run that paid for the reward model's rung alone (a budget that held it): the estimate's GenRM first rung
    is what the rounds' rule sends from the pool as it stands, exactly, not a replay; the rungs after it are
    replayed as a share of it."""
    from tasks.review.rounds import pending_shares

    for seed in range(2):
        world = make_world(500 + seed, 1500)
        earlier = np.arange(1500) < 500
        for i in np.flatnonzero(earlier):
            judge(world, int(i), "ab", 0)
            judge(world, int(i), "ba", 0)
        pool, c = ladder_pool(world)  # every pair scored by the reward model, the new ones too
        labels = source_labels(pool)
        sent = int((round_plan(pool, c, labels, POLICY, LADDER, ~earlier).rungs == 1).sum())
        shares = pending_shares(pool, c, labels, POLICY, LADDER, ~earlier, 1)
        assert shares is not None and round(shares[0] * 1000) == sent > 0
        replayed = first_decision(pool, labels, POLICY, LADDER, 1000)
        assert replayed is not None
        assert shares[1] == pytest.approx((sent / 1000) * replayed[0][1] / replayed[0][0])
        before = replace(pool, rm_margin=np.where(earlier, pool.rm_margin, np.nan))  # before the rung: a replay
        assert pending_shares(before, c, source_labels(before), POLICY, LADDER, ~earlier, 1)[0] == \
            replayed_shares(before, source_labels(before), POLICY, LADDER, 1000)[0]
    # a first run that paid for the reward model's rung alone: the GenRM's first rung is still the rule's own
    # decision, but no pair was ever judged by the GenRM, so nothing says how many climb past it (no figure, not 0)
    world = make_world(510, 1500)
    pool, c = ladder_pool(world)
    labels = source_labels(pool)
    every = np.ones(1500, bool)
    sent = int((round_plan(pool, c, labels, POLICY, LADDER, every).rungs == 1).sum())
    shares = pending_shares(pool, c, labels, POLICY, LADDER, every, 1)
    assert shares is not None and round(shares[0] * 1500) == sent > 0
    assert shares[1:] == [None] * (len(LADDER) - 2)
