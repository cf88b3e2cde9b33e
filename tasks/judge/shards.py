"""Hash buckets of pairs, so that GPU workers can split the pending pairs without talking to each other."""

from __future__ import annotations

from common.errors import InvalidInputError


def parse_shard(text: str) -> tuple[int, int]:
    """'2/8' -> (2, 8): bucket 2 of 8, counted from 0."""
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise InvalidInputError(f"shard must look like i/n (e.g. 0/4), not {text!r}") from None
    if count < 1 or not 0 <= index < count:
        raise InvalidInputError(f"shard {text!r}: need 0 <= i < n")
    return index, count


def pair_bucket(pair_id: str, count: int) -> int:
    """A pair's bucket: its id is already a uniform hash."""
    return int(pair_id[:12], 16) % count


def pairs_of_shard(ids: list[str], shard: str | None, limit: int | None) -> list[str]:
    """The ids of hash bucket `shard` ("i/n"), all of them when None, at most `limit`."""
    if shard is not None:
        index, count = parse_shard(shard)
        ids = [i for i in ids if pair_bucket(i, count) == index]
    return ids[:limit] if limit is not None else ids
