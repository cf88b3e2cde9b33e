"""Each valid row's fate, decided without a warehouse: new, already ingested, exact duplicate, swapped; and the
background writer's way out."""

from __future__ import annotations

import threading
import time

import pytest

from tasks.ingest.land import BackgroundWriter, classify

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


def test_the_background_writer_finishes_its_write_before_an_error_leaves_it():
    """Whatever runs after the block (restoring settings, recording the run) must find the connection free."""
    writing = threading.Event()
    finished = []

    def slow_write():
        writing.set()
        time.sleep(0.3)
        finished.append(True)

    with pytest.raises(ValueError, match="the reader's error"):
        with BackgroundWriter() as writer:
            writer.submit(slow_write)
            writing.wait()
            raise ValueError("the reader's error")
    assert finished == [True] and writer.failed is None


def test_a_write_that_fails_after_another_error_is_kept_not_raised():
    def failing_write():
        raise OSError("disk full")

    with pytest.raises(ValueError, match="first"):
        with BackgroundWriter() as writer:
            writer.submit(failing_write)
            raise ValueError("first")
    assert isinstance(writer.failed, OSError)
    with pytest.raises(OSError, match="disk full"):  # with no other error, a failed write is the error
        with BackgroundWriter() as writer:
            writer.submit(failing_write)
