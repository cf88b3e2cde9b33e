"""Calibrated p_correct on synthetic pairs with a known latent truth: the stand-in's verdict function (noise,
position bias) and rater labels that follow the same latent qualities with their own noise."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tasks.curate.calibration import MIN_LABELLED, calibrate, fit_p_correct, reliability
from tasks.curate.confidence import pool_confidences
from tasks.curate.pool import JudgedPair, JudgedPool
from tasks.ingest.latent import human_label, latent_direction
from tasks.ingest.sources import known_facts
from tasks.judge.genrm import Verdict, build_messages, to_a_side
from testing.genrm_standin import StandinConfig, verdict_for

HISTORY = [{"role": "user", "content": "Which is better?"}]
DOMAINS = ["general", "stem", "code"]


def judged(n: int, seed: int, position_bias: float = 0.3, label_share: float = 1.0) -> list[JudgedPair]:
    """`n` pairs judged in both orders by the stand-in's verdict function, human-labelled with `label_share`."""
    rng = random.Random(seed)
    config = StandinConfig(position_bias=position_bias)
    pairs = []
    for i in range(n):
        a, b = f"answer {seed}-{i}-a {rng.random()}", f"answer {seed}-{i}-b {rng.random()}"
        verdicts = []
        for order in ("ab", "ba"):
            v = verdict_for(build_messages(HISTORY, a, b, order), None, config)
            verdicts.append((order, to_a_side(Verdict(v.score_1, v.score_2, v.ranking), order)))
        from tasks.ingest.latent import latent_quality

        label = human_label(latent_quality(a), latent_quality(b), rng) if rng.random() < label_share else None
        pairs.append(JudgedPair(
            pair_id=f"{seed:04d}{i:012x}", source="helpsteer3", source_id=str(i), source_revision="r",
            history=HISTORY, response_a=a, response_b=b, human_label=None if label is None else float(label),
            both_bad=False, domain=DOMAINS[i % 3], language="en", contaminated=False, verdicts=verdicts))
    return pairs


def p_correct(pairs: list[JudgedPair]) -> tuple[dict[str, float], dict]:
    """{pair id: p_correct} for the pairs that have one, and the report."""
    pool = JudgedPool.of(pairs)
    c = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)
    p, report = calibrate(pool, c, known_facts())
    return {pool.pair_id[i]: float(p[i]) for i in np.flatnonzero(~np.isnan(p))}, report


@pytest.fixture(scope="module")
def fitted():
    pairs = judged(12_000, seed=1)
    return pairs, *p_correct(pairs)


def test_out_of_fold_probabilities_are_calibrated(fitted):
    pairs, p, report = fitted
    assert report["status"] == "fitted" and report["labelled"] > 6_000
    assert report["ece"] <= 0.03, report
    assert 0.0 < report["brier"] < 0.25
    assert sum(b["count"] for b in report["bins"]) == report["labelled"]
    assert set(report["by_domain"]) == set(DOMAINS)
    assert all(d["ece"] is not None and d["labelled"] >= 50 for d in report["by_domain"].values())


def test_held_out_pairs_are_calibrated_and_p_correct_09_keeps_pairs_right_at_least_09(fitted):
    """Pairs never seen in fitting (another seed, no human labels at all) scored by the fitted model: their
    probability against the clear labels they would have had, and against the latent truth itself."""
    train, _, _ = fitted
    held = judged(6_000, seed=2, label_share=1.0)
    unlabelled = [JudgedPair(**{**{s: getattr(x, s) for s in JudgedPair.__slots__}, "human_label": None})
                  for x in held]
    p, _ = p_correct(train + unlabelled)
    from tasks.curate.calibration import clear_human_direction
    from tasks.curate.confidence import pair_confidence

    probabilities, outcomes, kept_right, kept = [], [], 0, 0
    for x in held:
        if x.pair_id not in p:
            continue  # a judge tie: no direction
        c = pair_confidence(x.verdicts)
        human = clear_human_direction(x.source, x.human_label, False, known_facts())
        if human is not None:
            probabilities.append(p[x.pair_id])
            outcomes.append(int(human == c.direction))
        if p[x.pair_id] >= 0.9:
            kept += 1
            kept_right += c.direction == latent_direction(x.response_a, x.response_b)
    assert len(probabilities) > 3_000
    assert reliability(probabilities, outcomes)["ece"] <= 0.03
    assert kept > 1_000 and kept_right / kept >= 0.9


def test_too_few_labelled_pairs_give_no_probability_and_say_so():
    pairs = judged(MIN_LABELLED, seed=3, label_share=0.5)
    p, report = p_correct(pairs)
    assert p == {} and report["status"] == "too_few_labelled"
    assert report["labelled"] < MIN_LABELLED and "needs at least" in report["note"]


def test_reliability_of_known_probabilities():
    r = reliability([0.1, 0.1, 0.9, 0.9], [0, 1, 1, 1])
    assert r["ece"] == pytest.approx(0.5 * 0.4 + 0.5 * 0.1)
    assert r["brier"] == pytest.approx((0.01 + 0.81 + 0.01 + 0.01) / 4)
    assert [b["count"] for b in r["bins"]] == [2, 2]


def test_one_outcome_only_is_not_a_model():
    n = 500
    ids = np.array([f"{i:08x}" for i in range(n)], dtype=object)
    p, report = fit_p_correct(ids, np.array(["general"] * n, dtype=object), np.ones((n, 10)), np.ones(n, np.int8))
    assert np.isnan(p).all() and report["status"] == "too_few_labelled"


def test_a_clear_human_label_is_the_one_its_source_s_facts_state():
    """Which labels are evidence is read from the facts passed in (the warehouse's), never from the registry or a
    list here; a source the facts do not hold counts one step of the scale."""
    import dataclasses

    from tasks.curate.calibration import clear_human_direction, clear_human_directions
    from tasks.ingest.source_facts import DEFAULT_CLEAR_LABEL

    facts = known_facts()
    facts["strict-made-up"] = dataclasses.replace(facts["helpsteer3"], name="strict-made-up", clear_label=2.5)
    clear_of = {**{name: f.clear_label for name, f in facts.items()}, "a-source-another-build-wrote": DEFAULT_CLEAR_LABEL}
    assert clear_of["helpsteer3"] == 2.0 and clear_of["arena"] == 1.0
    for name, clear in clear_of.items():
        assert clear_human_direction(name, clear, False, facts) == "a"
        assert clear_human_direction(name, -clear, False, facts) == "b"
        assert clear_human_direction(name, clear - 0.25, False, facts) is None
        assert clear_human_direction(name, clear, True, facts) is None  # both bad: no direction
    assert clear_human_direction("strict-made-up", 2.0, False, facts) is None
    assert clear_human_direction("a-source-another-build-wrote", 2.0, False, facts) == "a"
    assert clear_human_direction("helpsteer3", 1.0, False, {}) == "a"  # no facts given: the default, not the registry
    labels = np.array([clear for c in clear_of.values() for clear in (c, -(c - 0.25))])
    sources = np.array([name for name in clear_of for _ in range(2)], dtype=object)
    got = clear_human_directions(sources, labels, np.zeros(len(labels), bool), facts)
    assert got.tolist() == [1, 0] * len(clear_of)
