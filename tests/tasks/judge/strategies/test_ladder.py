"""`ladder[:K]`: the reward model's one slot, then `certify[:K]`'s rungs on the GenRM; no GenRM judgment of every
pair up front."""

from __future__ import annotations

from tasks.judge.kinds import NO_ORDER
from tasks.judge.strategies import Ladder, parse_strategy


def test_the_ladder_is_the_reward_model_then_certify_s_rungs():
    ladder = parse_strategy("ladder")
    assert isinstance(ladder, Ladder) and ladder.label == "ladder:2" and ladder.judges_in_rounds
    assert ladder.initial() == [("ab", 0)] and ladder.one_order_on_purpose  # asked of no pair up front
    assert ladder.ladder() == [[(NO_ORDER, 0)], [("ab", 0)], [("ba", 0)], [("ab", 1), ("ba", 1)]]
    assert parse_strategy("ladder:1").ladder() == [[(NO_ORDER, 0)], [("ab", 0)], [("ba", 0)]]
    assert parse_strategy(ladder.label) == ladder
