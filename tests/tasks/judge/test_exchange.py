"""The judge exchange folder: work files round-trip, result batches are whole files, earlier results fold."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.judge.exchange import (
    Exchange,
    Heartbeat,
    HeartbeatWatch,
    ResultWriter,
    fold_results,
    plan_id,
    read_result,
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
    ex = Exchange(tmp_path)
    states = {("p1", "ab", 0): S("ok", 1, 1.5, 4, 2), ("p2", "ba", 0): S("failed", 2, None, None, None)}
    path = work_path(ex, "plan1", 1, 3)
    write_work(ex, path, plan="plan1", shard="1/3", config=CONFIG, strategy="swap", pairs=PAIRS, states=states)
    assert path.endswith("/plans/plan1/shard-1-of-3.parquet") and not list((tmp_path / "plans").rglob(".*tmp"))
    # a worker finds the exchange from the work file's location alone
    found, work_file = Exchange.of_work(ex.url_of(path))
    assert found.url == ex.url and work_file == path
    work = read_work(found, work_file)
    assert (work.plan_id, work.shard, work.label, work.strategy, work.config) == ("plan1", "1/3", "shard-1-of-3", "swap", CONFIG)
    assert work.pairs == PAIRS and work.states == states


def test_reading_a_missing_or_foreign_file_is_a_clear_error(tmp_path):
    ex = Exchange(tmp_path)
    with pytest.raises(FileNotFoundError, match="pointed at the orchestrator's exchange"):
        read_work(ex, ex.path("plans", "p", "nope.parquet"))
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    with pytest.raises(ValueError, match="not a shard work file"):
        read_work(ex, ex.path("other.parquet"))
    with pytest.raises(ValueError, match="not a shard work file's location"):
        Exchange.of_work(str(tmp_path / "somewhere.parquet"))


def test_plan_id_names_the_pending_work():
    assert plan_id("jc", "swap", ["a", "b"]) == plan_id("jc", "swap", ["a", "b"])
    assert len({plan_id("jc", "swap", ["a", "b"]), plan_id("jc", "swap", ["a"]), plan_id("jc", "single", ["a", "b"]),
                plan_id("jc2", "swap", ["a", "b"])}) == 4


def test_result_writer_numbers_batches_and_fold_prefers_ok_then_attempts(tmp_path):
    ex = Exchange(tmp_path)
    folder = results_dir(ex, "plan1", "shard-0-of-1")
    writer = ResultWriter(ex, folder, "run-a")
    writer.write(_rows(("p1", "ab", "failed", 1, None), ("p2", "ab", "ok", 1, 0.5)))
    writer.write(_rows())  # an empty batch writes no file
    writer.write(_rows(("p1", "ab", "ok", 2, -1.5), ("p2", "ba", "failed", 1, None)))
    writer.record({"run_id": "run-a", "status": "running"})
    local = tmp_path / "results" / "plan1" / "shard-0-of-1"
    assert sorted(p.name for p in local.glob("*.parquet")) == ["run-a-00001.parquet", "run-a-00002.parquet"]
    files = result_files(ex)
    assert [f.key for f in files] == ["results/plan1/shard-0-of-1/run-a-00001.parquet",
                                      "results/plan1/shard-0-of-1/run-a-00002.parquet"]
    table, digest = read_result(ex, files[0])
    assert table.num_rows == 2 and len(digest) == 32
    assert run_records(ex) == [{"run_id": "run-a", "status": "running"}]
    # the packet said p2/ba had failed twice: a later single failure does not lower the count
    states = {("p2", "ba", 0): S("failed", 2, None, None, None), ("p1", "ba", 0): S("ok", 1, 0.5, 3, 2)}
    assert fold_results(states, ex, folder) == 2
    assert states[("p1", "ab", 0)] == S("ok", 2, -1.5, 3, 2)
    assert states[("p2", "ab", 0)] == S("ok", 1, 0.5, 3, 2)
    assert states[("p2", "ba", 0)] == S("failed", 2, None, None, None)
    assert states[("p1", "ba", 0)] == S("ok", 1, 0.5, 3, 2)
    assert fold_results({}, ex, ex.path("absent")) == 0


def test_a_worker_run_is_recorded_around_its_block_as_the_warehouse_records_one(tmp_path):
    ex = Exchange(tmp_path)
    writer = ResultWriter(ex, results_dir(ex, "plan1", "shard-0-of-1"), "run-a")
    record = {"run_id": "run-a", "strategy": "swap"}
    with writer.recorded_run(record) as outcome:
        (started,) = run_records(ex)
        assert started["status"] == "running" and "finished_at" not in started
        record["template"] = "tpl-1"  # learned inside the block: in the later records
        outcome.summary = {"judged": 2}
    (done,) = run_records(ex)
    assert (done["status"], done["summary"], done["template"]) == ("completed", {"judged": 2}, "tpl-1")
    assert done["started_at"] == started["started_at"] <= done["finished_at"]

    failing = ResultWriter(ex, results_dir(ex, "plan1", "shard-0-of-1"), "run-b")
    with pytest.raises(RuntimeError, match="server gone"):
        with failing.recorded_run({"run_id": "run-b", "strategy": "swap"}):
            raise RuntimeError("server gone")
    failed = next(r for r in run_records(ex) if r["run_id"] == "run-b")
    assert failed["status"] == "failed" and failed["error"] == "RuntimeError: server gone" and "summary" not in failed


def test_liveness_is_the_heartbeat_changing_on_the_watchers_clock_not_a_file_time(tmp_path):
    ex = Exchange(tmp_path)
    folder = results_dir(ex, "plan1", "shard-0-of-1")
    watch = HeartbeatWatch(ex)
    assert watch.last_change(folder, now=100.0) is None
    with Heartbeat(ex, folder, "run-a", every=0.05) as beat:
        assert watch.last_change(folder, now=200.0) == 200.0  # written on entry, not on the thread's first beat
        time.sleep(0.3)
        assert beat.beats >= 3
        assert watch.last_change(folder, now=300.0) == 300.0  # a new beat since: alive at 300 on our clock
    assert watch.last_change(folder, now=400.0) == 300.0  # the worker stopped: no change after 300
    # a file's modification time says nothing: touching it without new content is not a beat
    (tmp_path / "results" / "plan1" / "shard-0-of-1" / "run-a.heartbeat").touch()
    assert watch.last_change(folder, now=500.0) == 300.0


def test_the_exchange_on_s3_compatible_object_storage(s3_server, monkeypatch):
    """The same exchange on a real S3-compatible server (moto's, over HTTP): work, results, records and
    heartbeats; credentials from storage options (a block or CURATE_JUDGE_EXCHANGE_OPTIONS), never shown."""
    endpoint, env = s3_server
    options = {"key": env["AWS_ACCESS_KEY_ID"], "secret": env["AWS_SECRET_ACCESS_KEY"],
               "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    monkeypatch.setenv("CURATE_JUDGE_EXCHANGE_OPTIONS", json.dumps(options))
    ex = Exchange("s3://exchange/run-1")
    assert "curate-test-secret" not in repr(ex)
    path = work_path(ex, "plan1", 0, 2)
    write_work(ex, path, plan="plan1", shard="0/2", config=CONFIG, strategy="swap", pairs=PAIRS,
               states={("p1", "ab", 0): S("ok", 1, 1.5, 4, 2)})
    url = ex.url_of(path)
    assert url == "s3://exchange/run-1/plans/plan1/shard-0-of-2.parquet"
    worker_ex, work_file = Exchange.of_work(url)
    assert read_work(worker_ex, work_file).pairs == PAIRS
    folder = results_dir(worker_ex, "plan1", "shard-0-of-2")
    writer = ResultWriter(worker_ex, folder, "run-a")
    writer.write(_rows(("p1", "ab", "ok", 1, 0.5)))
    writer.write(_rows(("p2", "ba", "failed", 1, None)))
    writer.record({"run_id": "run-a", "status": "completed"})
    watch = HeartbeatWatch(ex)
    with Heartbeat(worker_ex, folder, "run-a", every=0.1):
        first = watch.last_change(folder, now=1.0)
        time.sleep(0.5)
        assert first == 1.0 and watch.last_change(folder, now=2.0) == 2.0
    assert [f.key for f in result_files(ex)] == ["results/plan1/shard-0-of-2/run-a-00001.parquet",
                                                 "results/plan1/shard-0-of-2/run-a-00002.parquet"]
    assert run_records(ex) == [{"run_id": "run-a", "status": "completed"}]
    states: dict = {}
    assert fold_results(states, ex, folder) == 2 and states[("p1", "ab", 0)].status == "ok"


def test_storage_options_that_are_not_json_are_refused_without_echoing_them(monkeypatch):
    from tasks.judge.exchange import storage_options

    monkeypatch.setenv("CURATE_JUDGE_EXCHANGE_OPTIONS", "secret=hunter2")
    with pytest.raises(ValueError) as err:
        storage_options()
    assert "hunter2" not in str(err.value)
