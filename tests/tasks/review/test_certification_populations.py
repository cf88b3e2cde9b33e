"""Certified per population: a source's clear labels certify that source's pairs only; pairs no label speaks for
are not covered; a model's labels and labels that copy the judge never calibrate."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tasks.curate.confidence import pool_confidences
from tasks.curate.policy import make_policy
from tasks.ingest.source_facts import SourceFacts
from tasks.review.certification import certification_labels, certify_version, judge_like_sources
from tasks.review.overrides import PoolReviews
from testing.simulated_worlds import judge, make_world, pool_of

FACTS = {"labelled": SourceFacts("labelled"), "vendor": SourceFacts("vendor"),
         "copycat": SourceFacts("copycat"), "rated": SourceFacts("rated", human_labels=False)}


def _pool(n=2400, seed=7):
    world = make_world(seed, n, position_bias=0.3)
    for i in range(n):
        judge(world, i, "ab", 0)
        judge(world, i, "ba", 0)
    return pool_of(world)


def _confidences(pool):
    return pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)


def _mixed(pool, c):
    """A quarter each: labelled by people, unlabelled, labelled by a party copying the judge, labelled by a model."""
    kinds = np.array(["labelled", "vendor", "copycat", "rated"], dtype=object)[np.arange(len(pool)) % 4]
    label = pool.human_label.copy()
    label[kinds == "vendor"] = np.nan
    copy = (kinds == "copycat") & (c.direction != 0)
    label[copy] = 3.0 * c.direction[copy]
    return replace(pool, source=kinds, human_label=label)


def test_each_population_is_certified_on_its_own_labels_and_the_rest_is_not_covered():
    pool = _pool()
    c = _confidences(pool)
    pool = _mixed(pool, c)
    c = _confidences(pool)
    policy = make_policy({"target_agreement": 0.85})
    labels = certification_labels(pool, c, PoolReviews.none(len(pool)), policy, FACTS)
    assert labels.names() == ["labelled"]  # the copycat's and the model's labels do not calibrate
    assert set(labels.excluded) == {"copycat", "rated"} and "may copy the judge" in labels.excluded["copycat"]
    assert labels.split() == 2  # candidates with people's labels: labelled and copycat, fixed before the exclusion
    found, report, attempt = certify_version(pool, c, PoolReviews.none(len(pool)), policy, FACTS, "cfg")
    assert report["certified"] and attempt["attempt"] == 1
    assert set(pool.source[found.accepted].tolist()) == {"labelled"}
    assert set(report["not_covered"]) == {"vendor", "copycat", "rated"}
    assert report["risk_per_population"] == attempt["risk_spent"] / 2
    # trusting the judge-like labels on purpose lets them calibrate their own pairs
    trusted = make_policy({"target_agreement": 0.85, "judge_like_labels": "trust"})
    labels = certification_labels(pool, c, PoolReviews.none(len(pool)), trusted, FACTS)
    assert labels.names() == ["copycat", "labelled"]


def test_labels_that_agree_with_the_judge_far_above_the_others_are_flagged():
    rng = np.random.default_rng(3)
    source = np.array(["honest"] * 500 + ["odd"] * 500, dtype=object)
    direction = rng.choice(np.array([1, -1], np.int8), 1000)
    honest = np.where(rng.random(500) < 0.75, direction[:500], -direction[:500])
    odd = np.where(rng.random(500) < 0.92, direction[500:], -direction[500:])  # not 98%, but far above
    flagged = judge_like_sources(source, np.r_[honest, odd].astype(np.int8), direction)
    assert list(flagged) == ["odd"]
    fair = np.where(rng.random(500) < 0.78, direction[500:], -direction[500:])
    assert judge_like_sources(source, np.r_[honest, fair].astype(np.int8), direction) == {}


def test_a_score_that_follows_length_rather_than_the_judge_says_so():
    """People who prefer the longer answer and a judge that agrees with them by chance: what certifies is length,
    and the report names it."""
    pool = _pool(n=2000, seed=11)
    rng = np.random.default_rng(5)
    len_a = rng.integers(100, 4000, len(pool))
    len_b = rng.integers(100, 4000, len(pool))
    pool = replace(pool, source=np.full(len(pool), "labelled", dtype=object), len_a=len_a, len_b=len_b,
                   human_label=np.where(len_a > len_b, 3.0, -3.0))
    c = _confidences(pool)
    found, report, _ = certify_version(pool, c, PoolReviews.none(len(pool)), make_policy({"target_agreement": 0.8}),
                                       FACTS, "cfg")
    assert report["certified"] and report["score"]["leans_on"] == "length"
    assert report["score"]["explained"]["length"] > report["score"]["explained"]["judge_margin"]
    honest = _pool(n=2000, seed=11)
    honest = replace(honest, source=np.full(len(honest), "labelled", dtype=object))
    c = _confidences(honest)
    _, report, _ = certify_version(honest, c, PoolReviews.none(len(honest)), make_policy({"target_agreement": 0.8}),
                                   FACTS, "cfg")
    assert report["score"]["leans_on"] is None


def test_a_source_without_labels_is_covered_by_its_own_audit():
    """`review push --select audit --source vendor`: a uniform sample of the unlabelled source, decided by three
    reviewers, certifies that source's pairs; the labelled source keeps its own labels."""
    pool = _pool()
    c = _confidences(pool)
    truth = np.sign(np.nan_to_num(pool.human_label))  # what the reviewers prefer: the clear preference there is
    pool = _mixed(pool, c)
    c = _confidences(pool)
    reviews = PoolReviews.none(len(pool))
    vendor = np.flatnonzero((pool.source == "vendor") & (truth != 0))[:300]
    reviews.selected["audit"][vendor] = True
    reviews.outcome[vendor] = truth[vendor].astype(np.int8)
    reviews.reviewers[vendor] = 1
    reviews.voters.update({int(i): frozenset({f"r{i % 3}"}) for i in vendor})
    policy = make_policy({"target_agreement": 0.8})
    labels = certification_labels(pool, c, reviews, policy, FACTS)
    assert labels.kind == "mixed" and labels.names() == ["labelled", "vendor (review audit)"]
    found, report, _ = certify_version(pool, c, reviews, policy, FACTS, "cfg")
    assert report["populations"]["vendor (review audit)"]["certified"]
    assert set(pool.source[found.accepted].tolist()) == {"labelled", "vendor"}
    assert "vendor" not in report["not_covered"]
    # the same audit from one reviewer replaces nothing
    reviews.voters.update({int(i): frozenset({"r0"}) for i in vendor})
    assert certification_labels(pool, c, reviews, policy, FACTS).names() == ["labelled"]
