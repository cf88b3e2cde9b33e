from tasks.judge.genrm import Verdict, to_a_side
from tasks.judge.strategies.swap import Swap


def test_swap_is_both_orders_once_and_asks_nothing_after_a_verdict():
    s = Swap.from_spec(None, None)
    assert s.initial() == s.all_slots() == [("ab", 0), ("ba", 0)]
    assert s.follow_ups({("ab", 0): to_a_side(Verdict(4, 3, 3), "ab")}) == []  # even a borderline one
    assert s.label == "swap" and not s.one_order_on_purpose
