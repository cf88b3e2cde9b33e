from dataclasses import dataclass

from tasks.judge.strategies.protocol import Strategy, both_orders


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
