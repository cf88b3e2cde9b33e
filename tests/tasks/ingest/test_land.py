"""Each valid row's fate, decided without a warehouse: new, already ingested, exact duplicate, swapped; and the
background writer's way out."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field, fields

import pytest

from schemas.summaries import IngestSummary
from tasks.ingest.land import BackgroundWriter, BatchCounts, classify
from tasks.ingest.summary import summarize

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


def _filled(cls: type, base: int) -> BatchCounts:
    """An instance of `cls` whose every field holds its own value (a number, or a tally of two keys)."""
    values = {}
    for k, f in enumerate(fields(cls)):
        n = base + 10 * k
        values[f.name] = Counter({"x": n, f.name: 1}) if f.default_factory is Counter else n
    return cls(**values)


def test_batch_counts_are_summed_over_every_field_a_new_one_included():
    @dataclass
    class WithMore(BatchCounts):  # a counter added later, and a tally: `add` itself is not touched
        rows_retried: int = 0
        retried_by: Counter = field(default_factory=Counter)

    total, one, two = _filled(WithMore, 0), _filled(WithMore, 1), _filled(WithMore, 2)
    total.add(one)
    total.add(two)
    for f in fields(WithMore):
        got, parts = getattr(total, f.name), [getattr(c, f.name) for c in (_filled(WithMore, 0), one, two)]
        assert got == (sum(parts, Counter()) if isinstance(got, Counter) else sum(parts)), f.name
    assert total.rows_retried > 0 and total.retried_by["x"] > 0


def test_batch_counts_refuse_a_field_they_cannot_sum():
    @dataclass
    class WithName(BatchCounts):
        last_file: str = ""

    with pytest.raises(TypeError, match="last_file"):
        WithName(last_file="a").add(WithName(last_file="b"))


def test_every_batch_count_reaches_the_ingest_summary_and_the_summary_declares_every_key():
    summary = summarize(_filled(BatchCounts, 1))
    declared = set(IngestSummary.__annotations__)
    assert {f.name for f in fields(BatchCounts)} <= set(summary)
    assert set(summary) <= declared
