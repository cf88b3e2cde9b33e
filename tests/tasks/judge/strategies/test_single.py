from tasks.judge.strategies.single import Single


def test_single_is_the_ab_order_once_and_never_on_purpose():
    s = Single.from_spec(None, None)
    assert s.initial() == s.all_slots() == [("ab", 0)] and s.follow_ups({("ab", 0): None}) == []
    assert s.label == "single" and not s.one_order_on_purpose and not s.asks_follow_ups
