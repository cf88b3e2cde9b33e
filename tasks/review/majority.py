"""Several reviewers of one pair resolve by majority: each reviewer's latest choice counts once (a reviewer
who saw the pair in two projects, or changed their mind, is one vote), and the choice with strictly more votes
than any other is the outcome. No strict majority is a `split` (counted, and dropped from versions)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from tasks.review.labels import OUTCOMES

SPLIT = "split"
# Outcomes as int8 codes beside a pool's arrays: A and B as the judge's direction is coded (1, -1), 0 unreviewed.
CODES = {"a": 1, "b": -1, "tie": 2, "both_bad": 3, SPLIT: 4}

OUTCOME_SCHEMA = pa.schema([("pair_id", pa.string()), ("outcome", pa.string()), ("reviewers", pa.int64()),
                           ("votes_a", pa.int64()), ("votes_b", pa.int64()), ("votes_tie", pa.int64()),
                           ("votes_both_bad", pa.int64())])


def majority(sides: list[str]) -> str:
    """The outcome of one pair's votes (one per reviewer)."""
    if not sides:
        raise ValueError("a pair needs at least one vote")
    (top, n), *rest = Counter(sides).most_common()
    return SPLIT if rest and rest[0][1] == n else top


def resolve(votes: pa.Table) -> pa.Table:
    """`votes`: pair_id, reviewer, side, updated_at (any order) -> one outcome per pair (OUTCOME_SCHEMA)."""
    latest: dict[tuple[str, str], tuple] = {}
    columns = (votes.column(c).to_pylist() for c in ("pair_id", "reviewer", "side", "updated_at"))
    for pair, reviewer, side, at in zip(*columns):
        key = (pair, reviewer)
        if key not in latest or at >= latest[key][0]:
            latest[key] = (at, side)
    by_pair: dict[str, list[str]] = {}
    for (pair, _), (_, side) in sorted(latest.items()):
        by_pair.setdefault(pair, []).append(side)
    rows = []
    for pair, sides in by_pair.items():
        n = Counter(sides)
        rows.append({"pair_id": pair, "outcome": majority(sides), "reviewers": len(sides),
                     **{f"votes_{o}": n.get(o, 0) for o in OUTCOMES}})
    return pa.Table.from_pylist(rows, schema=OUTCOME_SCHEMA)
