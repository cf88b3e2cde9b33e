"""The figures every surface shows, each defined once: pairs judged and kept, agreement with human labels (ties
and both-bad apart), token lengths and the max_length that keeps a share of the rows."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from tasks.curate.figures import (
    estimated_lengths,
    human_agreement,
    size_category,
    token_lengths,
    version_figures,
)

NAN = float("nan")


def test_agreement_counts_ties_and_both_bad_apart_never_as_disagreement():
    label = np.array([1, 1, -1, -2, 0, 0, 0, NAN, 3, 2])
    both_bad = np.array([0, 0, 0, 0, 0, 0, 1, 0, 0, 0], bool)
    judge = np.array([1, -1, -1, -1, 1, -1, 1, 1, 0, 1], np.int8)
    a = human_agreement(label, both_bad, judge)
    # comparable: rows 0-3 and 9 (both prefer a side); agree: 0, 2, 3, 9
    assert (a["comparable"], a["agree"], a["disagree"]) == (5, 4, 1)
    assert (a["human_ties"], a["both_bad"], a["judge_ties"], a["labelled"]) == (2, 1, 1, 9)
    assert a["rate"] == 0.8
    # the old definition (every labelled pair, a tie counted against the judge) would have said 4/9
    assert human_agreement(np.array([NAN]), np.array([False]), np.array([1], np.int8))["rate"] is None


def test_pairs_judged_are_kept_plus_dropped_and_unjudged_pairs_are_apart():
    verdicts = np.array([2, 2, 2, 1, 0, 0, 2])
    direction = np.array([1, -1, 0, 1, 0, 0, 1], np.int8)
    contaminated = np.array([0, 0, 0, 0, 1, 0, 1], bool)
    label = np.array([1, 1, 1, NAN, 1, NAN, -1])
    kept = np.array([0, 3])
    dropped = Counter(not_judged=2, judge_tie=1, orders_disagree=1, contaminated=1)
    f = version_figures(verdicts, direction, contaminated, label, np.zeros(7, bool), kept, dropped)
    assert (f["pairs_judged"], f["pairs_kept"]) == (5, 2)
    assert f["not_judged"] == {"pairs": 2, "contaminated": 1}
    assert "not_judged" not in f["dropped"] and f["pairs_judged"] == f["pairs_kept"] + sum(f["dropped"].values())
    assert f["human_agreement"]["pool"]["comparable"] == 3 and f["human_agreement"]["pool"]["judge_ties"] == 1
    assert f["human_agreement"]["kept"] == {**f["human_agreement"]["kept"], "comparable": 1, "agree": 1, "rate": 1.0}


def test_token_lengths_give_quantiles_and_the_max_length_that_keeps_each_share():
    rng = np.random.default_rng(3)
    prompt, chosen, rejected = (rng.integers(10, 2000, 1000) for _ in range(3))
    t = token_lengths(prompt, chosen, rejected, "estimate")
    longer = prompt + np.maximum(chosen, rejected)
    for share, key in ((0.95, "95%"), (0.99, "99%")):
        limit = t["max_length_keeping"][key]
        assert (longer <= limit).mean() >= share and (longer <= limit - 1).mean() < share
    assert t["prompt"]["p50"] <= t["prompt"]["p90"] <= t["prompt"]["p99"] <= t["prompt"]["max"] == prompt.max()
    assert token_lengths(prompt[:0], chosen[:0], rejected[:0], "estimate") == {"rows": 0, "counted_by": "estimate"}


def test_estimated_lengths_are_the_stored_parts_as_they_are():
    tokens = pa.table({"prompt": pa.array([29, 11], pa.int32()), "chosen": pa.array([10, 28], pa.int32()),
                       "rejected": pa.array([9, 8], pa.int32())})
    t = estimated_lengths(tokens)
    assert t["rows"] == 2 and t["counted_by"] == "estimate"
    assert t["prompt"]["max"] == 29 and t["chosen"]["max"] == 28 and t["rejected"]["max"] == 9
    assert t["prompt_and_longer_answer"]["max"] == 39  # a row's prompt with its own longer answer
    assert estimated_lengths(tokens.slice(0, 0)) == {"rows": 0, "counted_by": "estimate"}


def test_size_categories_follow_the_hubs_buckets():
    assert [size_category(n) for n in (0, 999, 1000, 9_999, 10_000, 2_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "1K<n<10K", "10K<n<100K", "1M<n<10M"]
