"""A judge ladder's pool: a pair the reward model alone scored stands on its margin, the certification's score reads
the reward model beside the GenRM, and which pairs climb to the GenRM never depends on a calibration label."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tasks.curate.certification import (
    CertificationLabels,
    calibration_pairs,
    certify_pool,
    holds,
    next_rungs,
    signals,
)
from tasks.curate.ladder import scored_only, unseen_judge, with_reward_model
from tasks.judge.strategies import parse_strategy
from testing.reward_model_standin import RewardStandinConfig, score_for
from testing.simulated_worlds import judge, make_world, pool_of
from tests.tasks.curate.test_certification import confidences, source_labels

LADDER = parse_strategy("ladder").ladder()


def ladder_pool(world, config: RewardStandinConfig = RewardStandinConfig()):
    """The world's pool with the reward-model stand-in's margins (its scoring law, in process)."""
    pool = pool_of(world, one_order_on_purpose=True)
    rm = [score_for(p.history[-1]["content"], p.response_a, config) - score_for(p.history[-1]["content"], p.response_b,
                                                                                config) for p in world.pairs]
    pool = replace(pool, rm_margin=np.array(rm, float))
    return pool, with_reward_model(pool, confidences(pool))


def _flipped(pool, labels: CertificationLabels) -> CertificationLabels:
    calibrating = calibration_pairs(pool.pair_id, labels)
    return CertificationLabels(np.where(calibrating, -labels.calibration, labels.calibration), labels.training,
                               "source", labels.share)


def test_a_pair_the_reward_model_alone_scored_stands_on_its_margin():
    world = make_world(5, 300)
    for i in range(100):
        judge(world, i, "ab", 0)
    pool, c = ladder_pool(world)
    only = scored_only(pool, confidences(pool))  # the GenRM's own confidences: no verdict for these
    assert only.sum() == 200 and not only[:100].any()
    assert (c.direction[only] == np.sign(pool.rm_margin[only])).all() and (c.verdicts[only] == 1).all()
    assert (c.orders_agree[only] == 1).all() and (c.margin[only] == 0).all()  # no order, no GenRM margin
    plain = confidences(pool)
    assert (c.direction[:100] == plain.direction[:100]).all()  # the GenRM decides where it judged
    assert holds(pool, LADDER[0]).all() and holds(pool, LADDER[1])[:100].all() and not holds(pool, LADDER[1])[100:].any()
    # the score's signals: the reward model's margin toward the chosen side, and whether it gave one
    idx = np.arange(len(pool))
    assert signals(pool, c, idx).shape[1] == signals(replace(pool, rm_margin=None), plain, idx).shape[1] + 2


def test_escalation_up_the_ladder_never_reads_a_calibration_label():
    """Flipping every calibration pair's label changes the certificate, never a score nor who climbs: at rung 0
    (the reward model's scores alone) and once the GenRM has judged some pairs."""
    world = make_world(7, 1500)
    pool, c = ladder_pool(world)
    labels = source_labels(pool)
    every = np.ones(len(pool), bool)
    first = next_rungs(pool, c, labels, 0.9, 0.05, every, LADDER)
    assert np.array_equal(first.rungs, next_rungs(pool, c, _flipped(pool, labels), 0.9, 0.05, every, LADDER).rungs)
    climbing = first.rungs == 1
    assert 0 < climbing.sum() < len(pool)  # some pairs are sure on the reward model alone, the others climb
    assert unseen_judge(pool, labels.training)
    for i in np.flatnonzero(climbing):  # the GenRM's first order for the pairs the reward model left unsure
        judge(world, int(i), "ab", 0)
    pool, c = ladder_pool(world)
    assert not unseen_judge(pool, labels.training)
    a, b = certify_pool(pool, c, labels, 0.9, 0.05), certify_pool(pool, c, _flipped(pool, labels), 0.9, 0.05)
    assert np.array_equal(a.scores.score, b.scores.score, equal_nan=True)
    second = next_rungs(pool, c, labels, 0.9, 0.05, every, LADDER)
    assert np.array_equal(second.rungs, next_rungs(pool, c, _flipped(pool, labels), 0.9, 0.05, every, LADDER).rungs)
    assert set(np.unique(second.rungs)) <= {-1, 2, 3} and not (second.rungs[~climbing] >= 0).any()


def test_a_pool_without_a_ladder_is_read_as_before():
    world = make_world(9, 400)
    for i in range(400):
        judge(world, i, "ab", 0)
    pool = pool_of(world)
    c = confidences(pool)
    assert pool.rm_margin is None and with_reward_model(pool, c) is c and not unseen_judge(pool, np.ones(400))
