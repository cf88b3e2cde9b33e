"""What a version does with reviews: the reviewers' side wins, their tie, both-bad or split drops the pair,
nothing lifts contamination; with `review_overrides` off the rows follow the judge. Reviewers' labels join the
calibration, reported apart."""

from collections import Counter

import numpy as np
import pyarrow as pa

from tasks.curate.confidence import pool_confidences
from tasks.curate.policy import make_policy
from tasks.curate.pool import JudgedPair, JudgedPool
from tasks.curate.select import select_rows, version_table
from tasks.ingest.sources import known_facts
from tasks.judge.genrm import Verdict, to_a_side
from tasks.review.calibration import calibrate_with_reviews, reviewed_right
from tasks.review.overrides import PoolReviews, decided_by_reviewers, under_policy
from tasks.review.stats import review_stats

STRONG_A = [("ab", (5, 1, 1)), ("ba", (1, 5, 6))]
SLIGHT_A = [("ab", (4, 3, 3)), ("ba", (3, 4, 4))]
FLIP = [("ab", (4, 2, 2)), ("ba", (4, 2, 2))]


def _pair(i, verdicts, **kw):
    base = dict(pair_id=f"p{i:03d}", source="helpsteer3", source_id=str(i), source_revision="r",
                history=[{"role": "user", "content": f"question {i}"}], response_a=f"A{i}", response_b=f"B{i}",
                human_label=None, both_bad=False, domain="general", language="en", contaminated=False)
    base.update(kw)
    return JudgedPair(**base, verdicts=[(o, to_a_side(Verdict(*v), o)) for o, v in verdicts])


def _build(pairs, outcomes, selections=(), reviewers=None, **policy):
    pool = JudgedPool.of(pairs)
    c = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)
    reviewers = reviewers or {}
    reviews = PoolReviews.align(pool.pair_id, pa.table({
        "pair_id": list(outcomes), "outcome": list(outcomes.values()),
        "reviewers": [reviewers.get(p, 1) for p in outcomes]}),
        pa.table({"pair_id": [p for p, _ in selections], "selection": [s for _, s in selections]}))
    policy = make_policy(policy)
    decided, overriding = under_policy(reviews, c, policy.review_overrides)
    kept, dropped = select_rows(pool, decided, policy, None, overriding)
    rows = version_table(pool, decided, np.full(len(pool), np.nan), kept, policy,
                         decided_by_reviewers(overriding)).to_pylist()
    return {r["pair_id"]: r for r in rows}, dropped, review_stats(c, reviews, kept, policy.review_overrides)


PAIRS = [_pair(0, STRONG_A), _pair(1, STRONG_A), _pair(2, SLIGHT_A), _pair(3, FLIP), _pair(4, STRONG_A),
         _pair(5, STRONG_A), _pair(6, STRONG_A, contaminated=True), _pair(7, STRONG_A, both_bad=True), _pair(8, [])]
OUTCOMES = {"p001": "b", "p002": "a", "p003": "b", "p004": "tie", "p005": "split", "p006": "a", "p007": "a",
            "p008": "a", "p404": "a"}


def test_reviewers_decide_the_pairs_they_reviewed():
    rows, dropped, _ = _build(PAIRS, OUTCOMES)
    # p001 overridden (the judge said A); p002 below the margin and p003 a judge tie, kept on the reviewers' word;
    # p007 both-bad by its source, kept: the reviewer picked A
    assert {p: r["chosen_side"] for p, r in rows.items()} == {"p000": "a", "p001": "b", "p002": "a", "p003": "b",
                                                               "p007": "a"}
    assert rows["p001"]["margin"] == -2.5 and rows["p000"]["margin"] == 2.5 and rows["p002"]["margin"] == 0.5
    assert rows["p003"]["margin"] == 0.0 and str(rows["p003"]["margin"]) == "0.0"  # no -0.0 in a digest
    # a review cannot lift contamination or make verdicts that do not exist
    assert dropped == Counter(reviewed_tie=1, reviewed_split=1, contaminated=1, not_judged=1)


def test_a_row_reviewers_decided_stores_their_choice_and_count():
    rows, _, _ = _build(PAIRS, OUTCOMES, reviewers={"p001": 3, "p002": 2})
    assert {p: (r["reviewers"], r["reviewers_choice"]) for p, r in rows.items()} == {
        "p000": (None, None), "p001": (3, "b"), "p002": (2, "a"), "p003": (1, "b"), "p007": (1, "a")}
    # without overrides no row is the reviewers', and none says so
    off, _, _ = _build(PAIRS, OUTCOMES, review_overrides=False)
    assert all(r["reviewers"] is None and r["reviewers_choice"] is None for r in off.values())


def test_with_review_overrides_off_rows_follow_the_judge():
    rows, dropped, stats = _build(PAIRS, OUTCOMES, review_overrides=False)
    assert set(rows) == {"p000", "p001", "p004", "p005"} and rows["p001"]["chosen_side"] == "a"
    assert dropped == Counter(margin_below_min=1, judge_tie=1, contaminated=1, both_bad=1, not_judged=1)
    assert stats["review_overrides"] is False and stats["kept_overridden"] == 0


def test_review_stats_count_outcomes_and_agreement_per_selection():
    selections = [("p000", "audit"), ("p001", "audit"), ("p002", "audit"), ("p004", "audit"), ("p002", "borderline")]
    _, _, stats = _build(PAIRS, {**OUTCOMES, "p000": "a"}, selections)
    assert stats["reviewed_pairs"] == 8  # p404 is not in the pool; p008 has no verdicts
    assert stats["outcomes"] == {"a": 4, "b": 2, "tie": 1, "both_bad": 0, "split": 1}
    # judge directions: p000 A, p001 A, p002 A, p003 tie, p006 A, p007 A
    assert (stats["judge_confirmed"], stats["judge_overridden"]) == (4, 2)
    audit = stats["audit"]
    assert (audit["selected"], audit["reviewed"], audit["compared"], audit["judge_agrees"]) == (4, 4, 3, 2)
    assert audit["reviewed_tie"] == 1 and audit["ci95"][0] < audit["agreement"] < audit["ci95"][1]
    assert stats["borderline"]["compared"] == 1 and stats["disagreement"]["selected"] == 0


def test_reviews_replace_the_sources_labels_for_the_calibration():
    right = np.array([1, 0, -1, 1, -1], np.int8)
    judge = np.array([1, 1, -1, -1, 1], np.int8)
    outcome = np.array([0, 1, -1, 2, 4], np.int8)  # none, a, b, tie, split
    assert reviewed_right(right, judge, outcome).tolist() == [1, 1, 1, -1, -1]


def test_calibration_reports_each_kind_of_label_apart():
    rng = np.random.default_rng(5)
    pairs, outcomes = [], {}
    for i in range(400):
        strong = rng.random() < 0.7
        a_better = rng.random() < 0.5
        verdicts = (STRONG_A if strong else SLIGHT_A) if a_better else [("ab", (1, 5, 6)), ("ba", (5, 1, 1))]
        label = (2.0 if rng.random() < 0.9 else -2.0) if i % 2 else None
        label = label if label is None or a_better else -label
        pairs.append(_pair(i, verdicts, human_label=label))
        if i % 2 == 0 and i < 120:  # reviewers on 60 unlabelled pairs, right about the judge 5 times in 6
            outcomes[f"p{i:03d}"] = ("a" if a_better else "b") if i % 12 else ("b" if a_better else "a")
    pool = JudgedPool.of(pairs)
    c = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)
    reviews = PoolReviews.align(pool.pair_id, pa.table({"pair_id": list(outcomes), "outcome": list(outcomes.values()),
                                                         "reviewers": [1] * len(outcomes)}),
                                pa.table({"pair_id": [], "selection": []}))
    p, report = calibrate_with_reviews(pool, c, reviews, known_facts())
    sources = report["label_sources"]
    assert sources["review"]["labelled"] == 60 and sources["review"]["judge_right"] == 50
    assert sources["source"]["labelled"] == 200 and report["labelled"] == 260
    assert report["status"] == "fitted" and not np.isnan(p).any()
