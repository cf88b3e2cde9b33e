"""Agreement of reviewers with the judge, and Wilson's interval checked against published values."""

import numpy as np
import pytest

from tasks.review.agreement import agreement, wilson


def test_wilson_matches_published_values_and_stays_in_bounds():
    # Newcombe (1998), Statistics in Medicine 17, table I: 81/263 -> 0.2553-0.3662; 15/148 -> 0.0624-0.1605
    assert wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert wilson(15, 148) == pytest.approx((0.0624, 0.1605), abs=1e-4)
    low, high = wilson(0, 20)
    assert low == 0.0 and 0.15 < high < 0.17
    low, high = wilson(20, 20)
    assert high == 1.0 and 0.83 < low < 0.85
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_agreement_counts_only_pairs_where_both_pick_a_side():
    judge = np.array([1, 1, -1, -1, 1, 0, 1, 1], np.int8)
    outcome = np.array([1, -1, -1, 2, 3, 1, 4, 1], np.int8)  # a, b, b, tie, both_bad, a (judge tie), split, a
    got = agreement(judge, outcome)
    assert (got["reviewed"], got["compared"], got["judge_agrees"]) == (8, 4, 3)
    assert (got["reviewed_tie"], got["reviewed_both_bad"], got["split"], got["judge_tie"]) == (1, 1, 1, 1)
    assert got["agreement"] == 0.75 and got["ci95"] == [round(x, 4) for x in wilson(3, 4)]
    assert agreement(np.array([], np.int8), np.array([], np.int8))["agreement"] is None
