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
from tasks.review.select import Candidates, uncertified_order

QUEUE_SHOWN = 10  # the uncertified pairs nearest the threshold a version's stats name


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


def review_queue(pool: JudgedPool, c: Confidences, certified: Certified, reviews: PoolReviews,
                 shown: int = QUEUE_SHOWN) -> dict[str, Any]:
    """What `curate review push NAME --select uncertified` draws from, as the version was built: the pairs the
    certification could have accepted but did not (`pairs`), of them those reviewers have not decided or
    dropped yet (`not_reviewed`: a push sends these, reviewed ones it skips), and the first `shown` of those in
    the push's order (the highest score, nearest the threshold, first) with their scores."""
    candidates = Candidates.of_pool(pool, c, np.full(len(pool), np.nan), certified)
    order = uncertified_order(candidates)
    at = {p: i for i, p in enumerate(pool.pair_id.tolist())}
    reviewed = reviews.reviewed[np.array([at[p] for p in candidates.pair_id[order]], dtype=np.int64)]
    queue = order[~reviewed]
    return {"pairs": int(len(order)), "not_reviewed": int(len(queue)),
            "nearest": [{"pair_id": str(candidates.pair_id[i]), "score": round(float(candidates.certification_score[i]), 6)}
                        for i in queue[:shown]]}


def certify_version(pool: JudgedPool, c: Confidences, reviews: PoolReviews, policy: FilterPolicy,
                    facts: Mapping[str, SourceFacts]) -> tuple[Certified, dict[str, Any]]:
    """A version's certification (`certified_pairs`) and its report (`stats.certification`: what every surface
    reads), with how the labelled pairs differ from the judged pool and the review queue of the pairs it did not
    accept (`uncertified`). No threshold certifying the target: `NotCertifiedError`."""
    certified = certified_pairs(pool, c, reviews, policy, facts)
    judged = c.verdicts > 0
    report = {**certification_report(certified, int(judged.sum())), "min_audit_reviews": policy.min_audit_reviews,
              "population": labelled_mix(pool, certified.labels, judged)}
    if not report["certified"]:
        raise not_certified(report)
    return certified, {**report, "uncertified": review_queue(pool, c, certified, reviews)}
