"""The labels a certification reads, reviews and sources together, never a pair counted twice.

A uniform review audit (the `audit` selection, drawn from the judged pool) is the unbiased calibration set: when
its reviewers decided at least `min_audit_reviews` pairs (chose A or B), those pairs calibrate, and the guarantee
covers the judged pool's pairs on which a person prefers one answer. Otherwise a share of the pairs with a clear
source label calibrate, each on its source's label, and the guarantee covers pairs with a clear source label.
Every other label trains the p_correct model: a reviewed pair's reviewers' choice (a reviewed tie, both-bad or
split: no label), else its clear source label. A calibration pair's label never trains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from tasks.curate.calibration import clear_human_directions
from tasks.curate.certification import (
    AUDIT_SUFFIX,
    CertificationLabels,
    Certified,
    calibration_pairs,
    certification_report,
    certify_pool,
    labelled_mix,
    score_leaning,
)
from tasks.curate.confidence import Confidences
from tasks.curate.label_roles import CertificationHistory, attempt_of, labels_digest, role_conflict
from tasks.curate.policy import FilterPolicy
from tasks.curate.pool import JudgedPool
from tasks.curate.select import certifiable
from tasks.ingest.source_facts import SourceFacts, facts_in
from tasks.review.overrides import PoolReviews
from tasks.review.select import Candidates, uncertified_order

QUEUE_SHOWN = 10  # the uncertified pairs nearest the threshold a version's stats name


JUDGE_LIKE_AGREEMENT = 0.98  # a source's clear labels agreeing with the judge this often copy it, or are easy
JUDGE_LIKE_GAP = 0.10  # ... or this far above the other sources' labels, significantly
JUDGE_LIKE_MIN = 30  # clear labels with a judge direction a source needs before its agreement is read


def _interval(agree: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The two-sided Clopper-Pearson interval of `agree` of `n`."""
    from scipy.special import betaincinv

    tail = (1.0 - level) / 2
    low = 0.0 if agree == 0 else float(betaincinv(agree, n - agree + 1, tail))
    high = 1.0 if agree == n else float(betaincinv(agree + 1, n - agree, 1.0 - tail))
    return low, high


def judge_like_sources(source: np.ndarray, label: np.ndarray, direction: np.ndarray) -> dict[str, str]:
    """The sources whose clear labels (`label`, int8 per pair: 1 A, -1 B, 0 none) agree with the judge's
    `direction` so often that they may come from the judge (or a release of its picks) rather than from people:
    at least JUDGE_LIKE_AGREEMENT, or JUDGE_LIKE_GAP above the other sources' labels pooled with the two 95%
    intervals apart. Each with why."""
    both = (label != 0) & (direction != 0)
    agree = both & (label == direction)
    names = sorted({str(s) for s in source[both].tolist()})
    counts = {n: (int(agree[source == n].sum()), int(both[source == n].sum())) for n in names}
    out = {}
    for name, (k, n) in counts.items():
        if n < JUDGE_LIKE_MIN:
            continue
        rate = k / n
        if rate >= JUDGE_LIKE_AGREEMENT:
            out[name] = f"its clear labels agree with the judge on {k:,} of {n:,} pairs ({rate:.1%})"
            continue
        ko = sum(c[0] for m, c in counts.items() if m != name)
        no = sum(c[1] for m, c in counts.items() if m != name)
        if no >= JUDGE_LIKE_MIN and rate - ko / no >= JUDGE_LIKE_GAP and _interval(k, n)[0] > _interval(ko, no)[1]:
            out[name] = (f"its clear labels agree with the judge on {rate:.1%} of {n:,} pairs, the other sources' "
                         f"on {ko / no:.1%}")
    return out


AUDIT_MIN_PER_SOURCE = 30  # decided audit pairs a source needs before its audit, not its own labels, calibrates it


def certification_labels(pool: JudgedPool, c: Confidences, reviews: PoolReviews, policy: FilterPolicy,
                         facts: Mapping[str, SourceFacts]) -> CertificationLabels:
    """Which labels calibrate, which train, and whose pairs each calibration covers (`c`: the judge's own
    confidences; `facts`: each source's, as the warehouse stores them: its clear label says which source labels are
    clear, `human_labels` whether people gave them). One population per source:

    - A review audit calibrates once at least `min_audit_reviews` of its pairs are decided (by at least
      `audit_votes` votes each) by at least `min_audit_reviewers` distinct reviewers. A uniform sample of the judged
      pool (or of one source's pairs: `review push --select audit --source NAME`) is a uniform sample of each source
      it sampled: each such source with at least AUDIT_MIN_PER_SOURCE decided audit pairs is calibrated by its own
      audit pairs, whatever labels it carries.
    - Every other source with people's clear labels calibrates its own pairs. A model's labels (`human_labels` false:
      a rating model's, a published version's picks read back) never calibrate, and a source whose labels agree with
      the judge far above the others (`judge_like_sources`) is left out unless `judge_like_labels = "trust"`.

    δ is split over the populations that could calibrate (fixed from counts, before any label's value is read).
    Every label that does not calibrate trains."""
    source = clear_human_directions(pool.source, pool.human_label, pool.both_bad, facts)
    reviewed = reviews.direction()
    training = np.where(reviews.reviewed, reviewed, source).astype(np.int8)
    audit = reviews.selected.get("audit", np.zeros(len(pool), bool)) & reviews.decided
    audit &= reviews.reviewers >= policy.audit_votes
    voters = set().union(*(reviews.voters.get(int(i), frozenset()) for i in np.flatnonzero(audit))) \
        if audit.any() else set()
    audited: list[str] = []
    if int(audit.sum()) >= policy.min_audit_reviews and len(voters) >= policy.min_audit_reviewers:
        found = Counter(pool.source[audit].tolist())
        audited = sorted(n for n, k in found.items() if k >= AUDIT_MIN_PER_SOURCE or len(found) == 1)
    names = sorted(set(pool.source.tolist()) - set(audited))
    candidates = [n for n in names if facts_in(facts, n).human_labels and (source[pool.source == n] != 0).any()]
    excluded = {n: "its labels are not people's (human_labels is false)" for n in names
                if not facts_in(facts, n).human_labels and (source[pool.source == n] != 0).any()}
    direction = np.where(np.isin(pool.source, candidates), source, 0).astype(np.int8)
    copying = judge_like_sources(pool.source, direction, c.direction)
    if policy.judge_like_labels == "exclude":
        excluded.update({n: f"{why}: they may copy the judge" for n, why in copying.items()})
    trusted = [n for n in candidates if n not in excluded]
    by_audit = np.isin(pool.source, audited)
    by_source = np.isin(pool.source, trusted)
    calibration = np.where(by_audit, np.where(audit, reviewed, 0), np.where(by_source, source, 0)).astype(np.int8)
    population = np.where(by_audit, pool.source + AUDIT_SUFFIX, np.where(by_source, pool.source, "")).astype(object)
    kind = "audit" if audited and not trusted else "mixed" if audited else "source"
    return CertificationLabels(calibration, training, kind, 1.0 if kind == "audit" else policy.calibration_share,
                               population, len(audited) + len(candidates), excluded, by_audit)


def certified_pairs(pool: JudgedPool, c: Confidences, reviews: PoolReviews, policy: FilterPolicy,
                    facts: Mapping[str, SourceFacts], risk: float | None = None) -> Certified:
    """The pool certified at its policy's target and `risk` (default: the policy's; an attempt tests at its share of
    it, `tasks.curate.label_roles`) over the pairs the policy's label-free filters keep (`c`: the judge's own
    confidences); a pair that could be certified but is not has a score and is not accepted."""
    labels = certification_labels(pool, c, reviews, policy, facts)
    return certify_pool(pool, c, labels, policy.target_agreement, policy.risk if risk is None else risk,
                        certifiable(pool, c, policy))


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
                    facts: Mapping[str, SourceFacts], config_id: str = "",
                    history: CertificationHistory | None = None) -> tuple[Certified, dict[str, Any], dict[str, Any]]:
    """A version's certification (`certified_pairs`), its report (`stats.certification`: what every surface reads,
    with how the labelled pairs differ from the judged pool and the review queue of the pairs it did not accept,
    `uncertified`), and the attempt's record (`tasks.curate.label_roles`: the caller stores it, certified or not).
    Refused (`LabelRolesError`) when a calibration label trained the rounds of `history`. The caller raises
    `not_certified(report)` when nothing certified, after recording the attempt."""
    history = history or CertificationHistory()
    labels = certification_labels(pool, c, reviews, policy, facts)
    calibrating = calibration_pairs(pool.pair_id, labels)
    conflict = role_conflict(pool.pair_id, calibrating, policy, labels.kind, history)
    if conflict is not None:
        raise conflict
    attempt = attempt_of(config_id, policy, labels.kind, labels_digest(pool.pair_id, calibrating, labels.calibration),
                         history)
    certified = certify_pool(pool, c, labels, policy.target_agreement, attempt["risk_spent"],
                             certifiable(pool, c, policy))
    judged = c.verdicts > 0
    report = {**certification_report(certified, int(judged.sum()), pool.source),
              "risk": policy.risk, "attempt": attempt["attempt"], "risk_spent": attempt["risk_spent"],
              "min_audit_reviews": policy.min_audit_reviews, "population": labelled_mix(pool, certified.labels, judged),
              "score": score_leaning(pool, c, certified)}
    attempt["certified"] = bool(report["certified"])
    if report["certified"]:
        report["uncertified"] = review_queue(pool, c, certified, reviews)
    return certified, report, attempt
