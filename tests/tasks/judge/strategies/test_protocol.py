from dataclasses import dataclass

from tasks.judge.kinds import NO_ORDER
from tasks.judge.strategies import Ladder
from tasks.judge.strategies.adaptive import Adaptive
from tasks.judge.strategies.certify import Certify
from tasks.judge.strategies.protocol import Strategy, both_orders, first_order, oriented, slots_said
from tasks.judge.strategies.samples import Samples
from tasks.judge.strategies.single import Single
from tasks.judge.strategies.swap import Swap


def test_both_orders_keeps_a_pairs_orders_next_to_each_other():
    assert both_orders(2) == [("ab", 0), ("ba", 0), ("ab", 1), ("ba", 1)]


def test_a_strategy_that_names_only_its_first_judgments_asks_nothing_more():
    @dataclass(frozen=True)
    class OnlyBa(Strategy):
        usage = "ba"
        takes_k = False
        one_order_on_purpose = False
        label = "ba"

        def initial(self):
            return [("ba", 0)]

    s = OnlyBa()
    assert s.all_slots() == [("ba", 0)] and s.follow_ups({("ba", 0): None}) == [] and not s.asks_follow_ups


def test_a_pair_is_shown_its_shorter_answer_first_unless_it_was_judged_in_one_order_already():
    assert first_order(False, False, longer_a=True) == "ba"  # A longer: B, the shorter, shown first
    assert first_order(False, False, longer_a=False) == "ab"  # B longer, or a tie
    assert first_order(True, False, longer_a=True) == "ab"  # judged (or tried) in one order: it keeps that one
    assert first_order(False, True, longer_a=False) == "ba"
    assert first_order(True, True, longer_a=True) == "ba"  # both: the rule again (nothing rests on it then)


def test_a_strategys_slots_are_turned_to_a_pairs_first_order_and_said_so():
    rung = [("ab", 1), ("ba", 1)]
    assert oriented(rung, "ab") == rung and oriented(rung, "ba") == [("ba", 1), ("ab", 1)]
    assert oriented([("ab", 0)], "ba") == [("ba", 0)]
    assert oriented([(NO_ORDER, 0)], "ba") == [(NO_ORDER, 0)]  # a reward model's slot has no order
    assert slots_said(rung) == "ab 1, ba 1"  # as written: the strategy asks both orders of every pair
    assert slots_said(rung, Certify()) == "first 1, other 1" and slots_said(rung, Swap()) == "ab 1, ba 1"
    assert Certify().orients_first and Adaptive().orients_first and Ladder().orients_first
    assert not (Swap().orients_first or Single().orients_first or Samples(2).orients_first)
