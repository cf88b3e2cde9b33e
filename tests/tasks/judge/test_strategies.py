import pytest

from tasks.judge.genrm import Verdict, to_a_side
from tasks.judge.shards import pair_bucket, parse_shard
from tasks.judge.strategies import Strategy


def test_parse_and_initial_slots():
    assert Strategy.parse("single").initial() == [("ab", 0)]
    assert Strategy.parse("swap").initial() == [("ab", 0), ("ba", 0)]
    assert Strategy.parse("samples:2").initial() == [("ab", 0), ("ba", 0), ("ab", 1), ("ba", 1)]
    adaptive = Strategy.parse("adaptive:3")
    assert adaptive.initial() == [("ab", 0)] and len(adaptive.all_slots()) == 6
    assert Strategy.parse("adaptive").samples == 1 and Strategy.parse("samples:3").label == "samples:3"
    for bad in ("both", "samples:0", "samples:x"):
        with pytest.raises(ValueError):
            Strategy.parse(bad)


def test_adaptive_follows_up_only_borderline_verdicts():
    s = Strategy.parse("adaptive:2", borderline_margin=1.0)
    confident = to_a_side(Verdict(5, 1, 1), "ab")  # margin +2.5
    slight = to_a_side(Verdict(4, 3, 3), "ab")  # margin +0.5
    contradictory = to_a_side(Verdict(1, 5, 1), "ab")  # scores say B, ranking says A
    assert s.follow_ups({("ab", 0): confident}) == []
    assert s.follow_ups({("ab", 0): slight}) == [("ba", 0), ("ab", 1), ("ba", 1)]
    assert s.follow_ups({("ab", 0): contradictory}) != []
    assert s.follow_ups({("ab", 0): None}) == []  # a failed first verdict is retried, not followed up
    assert Strategy.parse("swap").follow_ups({("ab", 0): slight}) == []


def test_shards_partition_pairs():
    import hashlib
    from collections import Counter

    ids = [hashlib.blake2b(str(i).encode(), digest_size=16).hexdigest() for i in range(4000)]  # like pair ids
    counts = Counter(pair_bucket(i, 4) for i in ids)
    assert set(counts) == {0, 1, 2, 3} and min(counts.values()) > 900
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "x", "1/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)
