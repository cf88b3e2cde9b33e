import pytest

from common.settings import Settings
from tasks.judge.genrm import Verdict, to_a_side
from tasks.judge.strategies.adaptive import Adaptive


def test_adaptive_asks_ab_first_and_at_most_k_samples_of_each_order():
    s = Adaptive(3)
    assert s.initial() == [("ab", 0)] and len(s.all_slots()) == 6 and s.label == "adaptive:3"
    assert Adaptive.from_spec(None, None) == Adaptive(1)  # the default variant: the opposite order only
    assert Adaptive.from_spec(2, Settings(judge_adaptive_margin=0.5)) == Adaptive(2, 0.5)
    assert s.one_order_on_purpose and s.asks_follow_ups
    with pytest.raises(ValueError, match="at least 1"):
        Adaptive(0)


def test_adaptive_follows_up_only_borderline_verdicts():
    s = Adaptive(2, borderline_margin=1.0)
    confident = to_a_side(Verdict(5, 1, 1), "ab")  # margin +2.5
    slight = to_a_side(Verdict(4, 3, 3), "ab")  # margin +0.5
    contradictory = to_a_side(Verdict(1, 5, 1), "ab")  # scores say B, ranking says A
    assert s.follow_ups({("ab", 0): confident}) == []
    assert s.follow_ups({("ab", 0): slight}) == [("ba", 0), ("ab", 1), ("ba", 1)]
    assert s.follow_ups({("ab", 0): contradictory}) != []
    assert s.follow_ups({("ab", 0): None}) == []  # a failed first verdict is retried, not followed up
    assert s.follow_ups({}) == []
    # what is already known is not asked again
    assert s.follow_ups({("ab", 0): slight, ("ba", 0): confident}) == [("ab", 1), ("ba", 1)]


def test_adaptive_follows_up_a_first_verdict_in_either_order():
    """A pair whose longer answer is A is shown B first (`ba 0`): its verdict is followed up as `ab 0`'s would be."""
    s = Adaptive(1, borderline_margin=1.0)
    slight = to_a_side(Verdict(4, 3, 3), "ba")
    assert s.follow_ups({("ba", 0): slight}) == [("ab", 0)]
    assert s.follow_ups({("ba", 0): to_a_side(Verdict(5, 1, 1), "ba")}) == []
    assert s.follow_ups({("ba", 0): None}) == []  # failed: retried, not followed up
