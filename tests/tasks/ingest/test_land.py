"""Each valid row's fate, decided without a warehouse: new, already ingested, exact duplicate, swapped."""

from __future__ import annotations

from tasks.ingest.land import classify

RUN = "run-now"


def test_new_rows_and_a_repeated_line_in_the_same_batch():
    c = classify(["s1", "s2", "s1"], ["p1", "p2", "p1"], ["a", "b", "a"], RUN, seen={}, known={})
    assert c.fresh == [0, 1] and c.new == [0, 1] and c.exact_duplicates == 1 and c.already_ingested == 0


def test_rows_seen_by_an_earlier_run_are_already_ingested_and_by_this_run_duplicates():
    seen = {("s1", "p1"): "run-before", ("s2", "p2"): RUN}
    c = classify(["s1", "s2", "s3"], ["p1", "p2", "p3"], ["a", "b", "c"], RUN, seen=seen, known={})
    assert (c.already_ingested, c.exact_duplicates, c.new) == (1, 1, [2])


def test_the_same_pair_from_another_row_is_a_duplicate_and_says_whether_it_is_swapped():
    # in the same batch: row 1 shows the pair's answers the other way round
    c = classify(["s1", "s2"], ["p1", "p1"], ["x", "y"], RUN, seen={}, known={})
    assert c.new == [0] and c.fresh == [0, 1] and c.swapped == {1: True} and c.exact_duplicates == 1
    # against the warehouse: p1's stored A is this row's B
    c = classify(["s9"], ["p1"], ["y"], RUN, seen={}, known={"p1": False})
    assert c.new == [] and c.fresh == [0] and c.swapped == {0: True} and c.exact_duplicates == 1
    c = classify(["s9"], ["p1"], ["x"], RUN, seen={}, known={"p1": True})
    assert c.swapped == {0: False}
