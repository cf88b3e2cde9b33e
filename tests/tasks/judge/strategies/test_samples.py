import pytest

from tasks.judge.strategies.samples import Samples


def test_samples_is_k_samples_of_both_orders():
    assert Samples.from_spec(2, None).initial() == [("ab", 0), ("ba", 0), ("ab", 1), ("ba", 1)]
    assert Samples.from_spec(None, None) == Samples(1) and Samples(3).label == "samples:3"
    assert not Samples(3).asks_follow_ups and not Samples(3).one_order_on_purpose
    with pytest.raises(ValueError, match="at least 1"):
        Samples(0)
