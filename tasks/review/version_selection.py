"""A version's selection: the judged pool with its reviews, calibrated, certified when the policy asks it,
then kept or dropped by the policy; the version's table and statistics. It follows curate and review both,
so it is a review-stage module (a stage imports only earlier ones)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tasks.curate.certification import kept_counts, kept_coverage, not_certified
from tasks.curate.label_roles import CertificationHistory
from tasks.curate.personal_data import dropping, pii_stats
from tasks.curate.policy import FilterPolicy
from tasks.curate.select import certifiable, select_rows, version_table
from tasks.curate.stats import version_stats
from tasks.review.calibration import calibrate_with_reviews
from tasks.review.certification import certify_version
from tasks.review.overrides import decided_by_reviewers, under_policy
from tasks.review.pool import ReviewedPool
from tasks.review.stats import with_reviews
from warehouse.store import Warehouse


def version_selection(wh: Warehouse, config_id: str, policy: FilterPolicy) -> tuple[pa.Table, dict]:
    """The kept rows (without their texts) and the version's statistics: p_correct is fitted on this
    configuration's verdicts (cross-fitted on the pairs with a clear human label, reviewers' labels among
    them) before the policy filters on it; reviewed pairs take their reviewers' side (`review_overrides`).
    With a target agreement the selection is certified first (`stats.certification`), on the judge's own
    verdicts, the attempt recorded in the warehouse; refused when nothing certifies it. The personal data and
    secrets stored for the pool's pairs drop the pairs the policy's `pii` drops (`stats.pii` counts them)."""
    read = ReviewedPool.read(wh, config_id, policy)
    pool, confidences, reviews, facts = read.pool, read.judge, read.reviews, read.facts
    p_correct, calibration = calibrate_with_reviews(pool, confidences, reviews, facts)
    certified, covered, certification, score = None, None, None, None
    if policy.target_agreement is not None:
        history = CertificationHistory(frozenset(wh.certification.trained(config_id)),
                                       wh.certification.label_roles(config_id), wh.certification.attempts(config_id))
        found, certification, attempt = certify_version(pool, confidences, reviews, policy, facts, config_id, history)
        wh.certification.record_attempt(attempt)
        if not certification["certified"]:
            raise not_certified(certification)
        certification["attempts"] = len(wh.certification.attempts(config_id))
        certified, covered = found.accepted, found.covered | ~certifiable(pool, confidences, policy)
        score = np.where(found.accepted, found.scores.score, np.nan)  # the score that certified each row
    decided, overriding = under_policy(reviews, confidences, policy.review_overrides)
    ids = pa.array(pool.pair_id, pa.string())
    findings, actions = wh.pii.findings_of(ids), policy.pii_actions()
    kept, dropped = select_rows(pool, decided, policy, p_correct, overriding, certified, covered,
                                dropping(findings, pool.pair_id, actions))
    table = version_table(pool, decided, p_correct, kept, policy, decided_by_reviewers(overriding), score)
    stats = version_stats(pool, confidences, table, kept, dropped, calibration, facts)
    stats["pii"] = pii_stats(findings, pool.pair_id, kept, actions, wh.pii.scanned_of(ids),
                             wh.pii.model_scanned_of(ids))
    if certification is not None:
        stats["certification"] = {**certification, **kept_counts(certified, kept),
                                  **kept_coverage(pool, certified, covered, kept)}
    return table, with_reviews(stats, pool, confidences, decided, reviews, kept, policy.review_overrides)
