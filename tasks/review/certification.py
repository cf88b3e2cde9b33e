"""The labels a certification reads, reviews and sources together, never a pair counted twice.

A uniform review audit (the `audit` selection, drawn from the judged pool) is the unbiased calibration set: when
its reviewers decided at least `min_audit_reviews` pairs (chose A or B), those pairs calibrate, and the guarantee
covers the judged pool's pairs on which a person prefers one answer. Otherwise a share of the pairs with a clear
source label calibrate, each on its source's label, and the guarantee covers pairs with a clear source label.
Every other label trains the p_correct model: a reviewed pair's reviewers' choice (a reviewed tie, both-bad or
split: no label), else its clear source label. A calibration pair's label never trains.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tasks.curate.calibration import clear_human_directions
from tasks.curate.certification import (
    CertificationLabels,
    Certified,
    certification_report,
    certify_pool,
    labelled_mix,
    not_certified,
)
from tasks.curate.confidence import Confidences
from tasks.curate.policy import FilterPolicy
from tasks.curate.pool import JudgedPool
from tasks.curate.select import certifiable
from tasks.ingest.source_facts import SourceFacts
from tasks.review.overrides import PoolReviews


def certification_labels(pool: JudgedPool, reviews: PoolReviews, share: float, min_audit_reviews: int,
                         facts: Mapping[str, SourceFacts]) -> CertificationLabels:
    """`facts`: each source's, as the warehouse stores them (its clear label says which source labels are clear)."""
    source = clear_human_directions(pool.source, pool.human_label, pool.both_bad, facts)
    reviewed = reviews.direction()
    training = np.where(reviews.reviewed, reviewed, source).astype(np.int8)
    audit = reviews.selected.get("audit", np.zeros(len(pool), bool)) & reviews.decided
    if int(audit.sum()) >= min_audit_reviews:
        return CertificationLabels(np.where(audit, reviewed, 0).astype(np.int8), training, "audit", 1.0)
    return CertificationLabels(source, training, "source", share)


def certified_pairs(pool: JudgedPool, c: Confidences, reviews: PoolReviews, policy: FilterPolicy,
                    facts: Mapping[str, SourceFacts]) -> Certified:
    """The pool certified at its policy's target and risk (`c`: the judge's own confidences) over the pairs the
    policy's label-free filters keep; a pair that could be certified but is not has a score and is not accepted."""
    labels = certification_labels(pool, reviews, policy.calibration_share, policy.min_audit_reviews, facts)
    return certify_pool(pool, c, labels, policy.target_agreement, policy.risk, certifiable(pool, c, policy))


def certify_version(pool: JudgedPool, c: Confidences, reviews: PoolReviews, policy: FilterPolicy,
                    facts: Mapping[str, SourceFacts]) -> tuple[Certified, dict[str, Any]]:
    """A version's certification (`certified_pairs`) and its report (`stats.certification`: what every surface
    reads), with how the labelled pairs differ from the judged pool. No threshold certifying the target:
    `NotCertifiedError`."""
    certified = certified_pairs(pool, c, reviews, policy, facts)
    judged = c.verdicts > 0
    report = {**certification_report(certified, int(judged.sum())), "min_audit_reviews": policy.min_audit_reviews,
              "population": labelled_mix(pool, certified.labels, judged)}
    if not report["certified"]:
        raise not_certified(report)
    return certified, report
