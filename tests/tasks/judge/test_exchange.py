"""The judge exchange folder: work files round-trip, result batches are whole files, earlier results fold."""

from __future__ import annotations

import time
from datetime import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.judge.exchange import (
    Heartbeat,
    ResultWriter,
    fold_results,
    last_heartbeat,
    plan_id,
    read_work,
    result_files,
    results_dir,
    run_records,
    work_path,
    write_work,
)
from tasks.judge.run import JUDGMENT_SCHEMA
from tasks.judge.run import JudgmentState as S

PAIRS = [("p1", [{"role": "user", "content": "héllo"}], "A one", "B one"),
         ("p2", [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                 {"role": "user", "content": "q2"}], "A two", "B two")]
CONFIG = {"model": "m", "served_revision": "main", "prompt_version": "v1", "temperature": 0.6, "top_p": 0.95,
          "max_tokens": 100}


def _rows(*rows):
    base = {name: None for name in JUDGMENT_SCHEMA.names}
    out = []
    for pair_id, order, status, attempts, margin in rows:
        out.append({**base, "pair_id": pair_id, "judge_config_id": "jc", "order": order, "sample_index": 0,
                    "status": status, "attempts": attempts, "margin_a": margin, "score_a": 3 if margin else None,
                    "score_b": 2 if margin else None, "judge_run_id": "r", "finished_at": datetime(2026, 1, 1)})
    return pa.Table.from_pylist(out, schema=JUDGMENT_SCHEMA)


def test_work_file_round_trips_pairs_states_and_the_plan(tmp_path):
    states = {("p1", "ab", 0): S("ok", 1, 1.5, 4, 2), ("p2", "ba", 0): S("failed", 2, None, None, None)}
    path = work_path(tmp_path, "plan1", 1, 3)
    write_work(path, plan="plan1", shard="1/3", config=CONFIG, strategy="swap", pairs=PAIRS, states=states)
    assert path.name == "shard-1-of-3.parquet" and not list(path.parent.glob(".*tmp"))
    work = read_work(path)
    assert (work.plan_id, work.shard, work.label, work.strategy, work.config) == ("plan1", "1/3", "shard-1-of-3", "swap", CONFIG)
    assert work.pairs == PAIRS and work.states == states


def test_reading_a_missing_or_foreign_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="exchange folder shared"):
        read_work(tmp_path / "nope.parquet")
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1]}), other)
    with pytest.raises(ValueError, match="not a shard work file"):
        read_work(other)


def test_plan_id_names_the_pending_work():
    assert plan_id("jc", "swap", ["a", "b"]) == plan_id("jc", "swap", ["a", "b"])
    assert len({plan_id("jc", "swap", ["a", "b"]), plan_id("jc", "swap", ["a"]), plan_id("jc", "single", ["a", "b"]),
                plan_id("jc2", "swap", ["a", "b"])}) == 4


def test_result_writer_numbers_batches_and_fold_prefers_ok_then_attempts(tmp_path):
    folder = results_dir(tmp_path, "plan1", "shard-0-of-1")
    writer = ResultWriter(folder, "run-a")
    writer.write(_rows(("p1", "ab", "failed", 1, None), ("p2", "ab", "ok", 1, 0.5)))
    writer.write(_rows())  # an empty batch writes no file
    writer.write(_rows(("p1", "ab", "ok", 2, -1.5), ("p2", "ba", "failed", 1, None)))
    writer.record({"run_id": "run-a", "status": "running"})
    assert sorted(p.name for p in folder.glob("*.parquet")) == ["run-a-00001.parquet", "run-a-00002.parquet"]
    assert [f.key for f in result_files(tmp_path)] == ["results/plan1/shard-0-of-1/run-a-00001.parquet",
                                                       "results/plan1/shard-0-of-1/run-a-00002.parquet"]
    assert run_records(tmp_path) == [{"run_id": "run-a", "status": "running"}]
    # the packet said p2/ba had failed twice: a later single failure does not lower the count
    states = {("p2", "ba", 0): S("failed", 2, None, None, None), ("p1", "ba", 0): S("ok", 1, 0.5, 3, 2)}
    assert fold_results(states, folder) == 2
    assert states[("p1", "ab", 0)] == S("ok", 2, -1.5, 3, 2)
    assert states[("p2", "ab", 0)] == S("ok", 1, 0.5, 3, 2)
    assert states[("p2", "ba", 0)] == S("failed", 2, None, None, None)
    assert states[("p1", "ba", 0)] == S("ok", 1, 0.5, 3, 2)
    assert fold_results({}, tmp_path / "absent") == 0


def test_heartbeat_is_touched_while_held(tmp_path):
    assert last_heartbeat(tmp_path) is None
    with Heartbeat(tmp_path, "run-a", every=0.05):
        first = last_heartbeat(tmp_path)
        assert first is not None  # written on entry, not on the thread's first beat
        time.sleep(0.3)
        assert last_heartbeat(tmp_path) > first
