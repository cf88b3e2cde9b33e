import pytest

from tasks.curate.confidence import pair_confidence
from tasks.judge.genrm import Verdict, to_a_side


def v(s1, s2, r, order="ab"):
    return order, to_a_side(Verdict(s1, s2, r), order)


def test_unanimous_much_better_is_full_confidence():
    c = pair_confidence([v(5, 1, 1, "ab"), v(1, 5, 6, "ba")], human_label=2.0)
    assert (c.margin, c.direction, c.orders_agree, c.scores_agree, c.spread, c.human_agrees, c.confidence) == \
        (2.5, "a", True, True, 0.0, True, 1.0)


def test_position_flip_cancels_out():
    # shown first wins both times: A wins in ab, B wins in ba
    c = pair_confidence([v(4, 2, 2, "ab"), v(4, 2, 2, "ba")])
    assert c.margin == 0.0 and c.direction == "tie" and c.orders_agree is False and c.confidence == 0.0
    assert c.spread == 1.5


def test_single_order_and_contradicting_scores():
    c = pair_confidence([v(2, 4, 3)])  # ranking says A slightly, scores say B
    assert c.orders_agree is None and c.scores_agree is False and c.confidence == 0.0
    c = pair_confidence([v(4, 3, 3)])
    assert c.confidence == pytest.approx(0.5 / 2.5) and c.direction == "a"


def test_partial_agreement_lowers_confidence():
    strong = pair_confidence([v(5, 2, 2, "ab"), v(2, 5, 5, "ba")])
    mixed = pair_confidence([v(5, 2, 2, "ab"), v(4, 3, 3, "ba")])  # ba says B slightly better
    assert strong.confidence == pytest.approx(1.5 / 2.5)
    # mean margin +0.5 (strength 0.2), one verdict of two on that side, scores consistent
    assert mixed.confidence == pytest.approx(0.2 * 0.5) and mixed.orders_agree is False


def test_human_label_agreement_and_ties():
    assert pair_confidence([v(2, 5, 6)], human_label=-1.0).human_agrees is True
    assert pair_confidence([v(2, 5, 6)], human_label=1.0).human_agrees is False
    assert pair_confidence([v(2, 5, 6)], human_label=None).human_agrees is None
    assert pair_confidence([v(2, 5, 6)], human_label=0.0).human_agrees is False
    with pytest.raises(ValueError):
        pair_confidence([])


def test_pool_confidences_equal_pair_confidence_for_every_pair():
    """The columnar computation a version uses, against the per-pair definition, on random verdicts."""
    import random

    import numpy as np

    from tasks.curate.confidence import pool_confidences

    rng = random.Random(5)
    pairs = []
    for _ in range(3_000):
        k = rng.choice([0, 1, 1, 2, 2, 2, 3, 4])
        verdicts = [v(rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 6), rng.choice(["ab", "ba"]))
                    for _ in range(k)]
        pairs.append((verdicts, rng.choice([None, -3.0, -1.0, 0.0, 1.0, 2.0])))
    flat = [(i, o == "ab", s.margin, s.score_a == s.score_b or (s.score_a > s.score_b) == (s.margin > 0))
            for i, (vs, _) in enumerate(pairs) for o, s in vs]
    cols = [np.array(x) for x in zip(*flat)]
    labels = np.array([np.nan if h is None else h for _, h in pairs])
    c = pool_confidences(len(pairs), cols[0].astype(np.int64), cols[1].astype(bool), cols[2].astype(float),
                         cols[3].astype(bool), labels)
    tri = {None: -1, False: 0, True: 1}
    for i, (verdicts, human) in enumerate(pairs):
        if not verdicts:
            assert c.verdicts[i] == 0
            continue
        ref = pair_confidence(verdicts, human)
        assert c.margin[i] == pytest.approx(ref.margin, abs=1e-9)
        assert {1: "a", -1: "b", 0: "tie"}[int(c.direction[i])] == ref.direction
        assert c.orders_agree[i] == tri[ref.orders_agree] and c.human_agrees[i] == tri[ref.human_agrees]
        assert bool(c.scores_agree[i]) == ref.scores_agree and c.verdicts[i] == ref.verdicts
        assert c.spread[i] == pytest.approx(ref.spread, abs=1e-9)
        assert c.confidence[i] == pytest.approx(ref.confidence, abs=1e-9)
