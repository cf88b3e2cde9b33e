import hashlib
from collections import Counter

import pytest

from tasks.judge.shards import pair_bucket, pairs_of_shard, parse_shard


def test_shards_partition_pairs():
    ids = [hashlib.blake2b(str(i).encode(), digest_size=16).hexdigest() for i in range(4000)]  # like pair ids
    counts = Counter(pair_bucket(i, 4) for i in ids)
    assert set(counts) == {0, 1, 2, 3} and min(counts.values()) > 900
    assert sorted(i for s in range(4) for i in pairs_of_shard(ids, f"{s}/4", None)) == sorted(ids)
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "x", "1/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)
