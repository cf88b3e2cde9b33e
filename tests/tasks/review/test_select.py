"""Which pairs of a version go to reviewers: borderline, disagreement, audit; a second push picks the same."""

import numpy as np
import pyarrow as pa
import pytest

from tasks.review.select import Candidates, pick, ranked


def _candidates(p_correct, margin, margin_ab=None, margin_ba=None, human_label=None, both_bad=None, ids=None):
    n = len(margin)
    nan = [None] * n
    return Candidates.from_arrow(pa.table({
        "pair_id": ids or [f"p{i:02d}" for i in range(n)], "p_correct": pa.array(p_correct, pa.float64()),
        "margin": pa.array(margin, pa.float64()), "margin_ab": pa.array(margin_ab or margin, pa.float64()),
        "margin_ba": pa.array(margin_ba or margin, pa.float64()),
        "human_label": pa.array(human_label or nan, pa.float64()), "both_bad": both_bad or [False] * n}))


def test_borderline_is_p_correct_closest_to_a_half_else_the_smallest_margin():
    c = _candidates([0.9, 0.55, 0.62, None, 0.51], [2.0, -0.5, 1.0, 0.25, 2.5])
    # with p_correct: by |p - 0.5|; the pair without one comes after, whatever its margin
    assert c.pair_id[ranked(c, "borderline")].tolist() == ["p04", "p01", "p02", "p00", "p03"]
    nocal = _candidates([None] * 4, [2.0, -0.5, 1.5, -2.5])
    assert nocal.pair_id[ranked(nocal, "borderline")].tolist() == ["p01", "p02", "p00", "p03"]


def test_disagreement_is_orders_or_the_source_label_against_the_judge():
    c = _candidates([0.7] * 6, [1.0, 1.0, 1.0, 1.0, -1.0, 1.0],
                    margin_ab=[1.5, 1.5, 1.5, 1.5, -1.0, 1.5], margin_ba=[-0.5, 1.0, 1.0, 1.0, -1.0, 1.0],
                    human_label=[None, -2.0, 0.0, -1.0, 2.0, None], both_bad=[False, False, False, True, False, False])
    # p00: orders disagree; p01: label against; p02: a human tie; p03: both-bad; p04: label against; p05: agreed
    assert sorted(c.pair_id[ranked(c, "disagreement")]) == ["p00", "p01", "p04"]


def test_audit_is_a_seeded_sample_that_a_larger_limit_extends():
    c = _candidates([0.9] * 200, [2.0] * 200)
    first = c.pair_id[pick(c, "audit", 20, set(), set(), seed=3).index].tolist()
    more = c.pair_id[pick(c, "audit", 50, set(), set(), seed=3).index].tolist()
    other = c.pair_id[pick(c, "audit", 20, set(), set(), seed=4).index].tolist()
    assert more[:20] == first and len(set(more)) == 50 and set(other) != set(first)
    # uniform: not the pair id order, and no relation to p_correct or margin here to follow
    assert first != sorted(first)


def test_pick_takes_the_first_n_and_says_which_need_a_task():
    c = _candidates([0.5, 0.52, 0.55, 0.6, 0.7], [0.1, 0.2, 0.3, 0.4, 0.5])
    picked = pick(c, "borderline", 3, in_project={"p01"}, reviewed={"p02", "p01"})
    assert c.pair_id[picked.index].tolist() == ["p00", "p01", "p02"]
    assert picked.needs_task.tolist() == [True, False, False] and (picked.in_project, picked.reviewed) == (1, 1)
    again = pick(c, "borderline", 3, in_project={"p00", "p01"}, reviewed={"p02", "p01"})
    assert not again.needs_task.any()
    with pytest.raises(ValueError):
        ranked(c, "random")


def test_judge_side_follows_the_mean_margin():
    c = _candidates([None] * 3, [0.5, -1.0, 0.0])
    assert c.judge_side.tolist() == ["a", "b", "tie"]
    assert np.isnan(c.p_correct).all()


def test_uncertified_are_the_pairs_a_certification_left_out_nearest_its_threshold_first():
    c = _candidates([0.9] * 5, [1.0] * 5)
    with pytest.raises(ValueError, match="needs a certified version"):
        ranked(c, "uncertified")
    from dataclasses import replace

    c = replace(c, certification_score=np.array([0.95, 0.60, np.nan, 0.70, 0.65]),
                uncertified=np.array([False, True, False, True, True]))
    assert c.pair_id[ranked(c, "uncertified")].tolist() == ["p03", "p04", "p01"]


def test_candidates_of_a_pool_are_its_judged_pairs_with_each_order_s_margin():
    from tasks.curate.confidence import pool_confidences
    from tasks.curate.pool import JudgedPair, JudgedPool
    from tasks.judge.genrm import Verdict, to_a_side

    def pair(i, verdicts, label=None):
        return JudgedPair(f"q{i}", "helpsteer3", str(i), "r", [{"role": "user", "content": f"x{i}"}], f"A{i}",
                          f"B{i}", label, False, "general", "en", False,
                          verdicts=[(o, to_a_side(Verdict(*v), o)) for o, v in verdicts])

    pool = JudgedPool.of([pair(0, [("ab", (5, 1, 1)), ("ba", (5, 1, 2))], 2.0), pair(1, []),
                          pair(2, [("ab", (1, 5, 6))])])
    judge = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)
    c = Candidates.of_pool(pool, judge, np.array([0.7, np.nan, 0.8]))
    assert c.pair_id.tolist() == ["q0", "q2"] and c.p_correct.tolist() == [0.7, 0.8]  # q1 has no verdict
    assert c.margin_ab[0] > 0 > c.margin_ba[0] and np.isnan(c.margin_ba[1]) and c.margin_ab[1] < 0
    assert c.judge_side.tolist() == ["a", "b"] and c.human_label[0] == 2.0 and c.uncertified is None
    assert c.pair_id[ranked(c, "disagreement")].tolist() == ["q0"]  # its orders disagree
