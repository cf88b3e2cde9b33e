"""A judge ladder's pool: a pair the reward model alone scored stands on its margin, the certification's score reads
the reward model beside the GenRM, and which pairs climb to the GenRM never depends on a calibration label."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tasks.curate import certification
from tasks.curate.certification import (
    CertificationLabels,
    calibration_pairs,
    certify_pool,
    escalation_cutoff,
    holds,
    next_rungs,
    signals,
)
from tasks.curate.ladder import (
    CONFIRMED_MARGIN,
    confirming_margin,
    contradicts_reward_model,
    scored_only,
    unseen_judge,
    with_reward_model,
)
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
    # a pair that stopped on the reward model may climb once the model is refitted, but only to the GenRM's first order
    assert set(np.unique(second.rungs[climbing])) <= {-1, 2, 3} and set(np.unique(second.rungs[~climbing])) <= {-1, 1}


def _earlier_run(seed: int, pairs: int, judged: int):
    """A world whose first `judged` pairs an earlier run sent to the GenRM's first order (enough training pairs for
    the score's model to know what its verdict adds); the others the reward model alone scored."""
    world = make_world(seed, pairs)
    for i in range(judged):
        judge(world, i, "ab", 0)
    pool, c = ladder_pool(world)
    labels = source_labels(pool)
    assert not unseen_judge(pool, labels.training)
    return world, pool, c, labels


def test_a_pair_the_reward_model_left_unsure_climbs_once_the_genrm_is_known():
    """A later run's pairs climb where a confirming GenRM verdict would carry them: the projection stands on the
    reward model's side, never on a tie (the confidences count the reward model's score as a verdict)."""
    world, pool, c, labels = _earlier_run(11, 1500, 600)
    only = scored_only(pool)
    assert only[600:].all() and not only[:600].any()
    margin = confirming_margin(pool, c, np.zeros(len(pool)))
    assert (margin[only] == CONFIRMED_MARGIN * np.sign(pool.rm_margin[only])).all()
    plan = next_rungs(pool, c, labels, 0.9, 0.05, np.ones(len(pool), bool), LADDER)
    assert 0 < (plan.rungs[only] == 1).sum() < only.sum()


def test_the_other_order_goes_only_where_the_verdicts_contradict(monkeypatch):
    """A GenRM order the reward model confirms was checked by a judge with no position bias: the other order is
    asked only where the reward model's margin points the other way (or the GenRM's verdicts disagree)."""
    world, pool, c, labels = _earlier_run(11, 1500, 600)
    every = np.ones(len(pool), bool)
    plan = next_rungs(pool, c, labels, 0.9, 0.05, every, LADDER)
    contradicting = contradicts_reward_model(pool, c) | (c.orders_agree == 0) | ~c.scores_agree
    assert contradicting[plan.rungs == 2].all()
    monkeypatch.setattr(certification, "contradicts_reward_model", lambda pool, c: np.ones(len(pool), bool))
    without = next_rungs(pool, c, labels, 0.9, 0.05, every, LADDER)  # the rule off: every pair may get it
    assert ((without.rungs == 2) & ~contradicting).sum() > 5


def test_the_reward_model_alone_stops_a_pair_at_a_stricter_threshold(monkeypatch):
    world, pool, c, labels = _earlier_run(7, 1500, 600)
    every = np.ones(len(pool), bool)
    strict = escalation_cutoff(pool, c, labels, 0.9, 0.05, every)
    monkeypatch.setattr(certification, "REWARD_MODEL_STOP", 1.0)
    same = escalation_cutoff(pool, c, labels, 0.9, 0.05, every)
    only = scored_only(pool)
    assert not (strict.sure & ~same.sure).any() and strict.sure[only].sum() < same.sure[only].sum()
    assert np.array_equal(strict.sure[~only], same.sure[~only])  # the GenRM's verdicts stop pairs as before


def test_a_pool_without_a_ladder_is_read_as_before():
    world = make_world(9, 400)
    for i in range(400):
        judge(world, i, "ab", 0)
    pool = pool_of(world)
    c = confidences(pool)
    assert pool.rm_margin is None and with_reward_model(pool, c) is c and not unseen_judge(pool, np.ones(400))
