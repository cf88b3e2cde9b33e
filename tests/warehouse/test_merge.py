"""Merging worker result files into the warehouse: once per file, order-independent, loud on rewrites."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa
import pytest

from tasks.judge.run import JUDGMENT_SCHEMA
from warehouse.store import Warehouse


def _rows(*rows):
    base = {name: None for name in JUDGMENT_SCHEMA.names}
    return pa.Table.from_pylist([{**base, "pair_id": p, "judge_config_id": "jc", "order": "ab", "sample_index": 0,
                                  "status": status, "attempts": attempts, "judge_run_id": run,
                                  "finished_at": datetime(2026, 1, 1)} for p, status, attempts, run in rows],
                                schema=JUDGMENT_SCHEMA)


def _state(wh):
    return sorted(wh.query("SELECT pair_id, status, attempts, judge_run_id FROM judgments"))


def test_a_file_merges_once_and_a_replay_changes_nothing(warehouse_path):
    rows = _rows(("p1", "ok", 1, "r1"), ("p2", "failed", 1, "r1"))
    with Warehouse(warehouse_path) as wh:
        assert wh.judging.merge_result_file("results/x/shard-0-of-1/r1-00001.parquet", "d1", rows) == "merged"
        first = _state(wh)
        assert wh.judging.merge_result_file("results/x/shard-0-of-1/r1-00001.parquet", "d1", rows) == "seen"
        assert _state(wh) == first
        assert wh.judging.merged_file_keys() == {"results/x/shard-0-of-1/r1-00001.parquet"}
        # the same name with other bytes: nothing of it is merged
        assert wh.judging.merge_result_file("results/x/shard-0-of-1/r1-00001.parquet", "d2", _rows(("p3", "ok", 1, "r1"))) \
            == "rewritten"
        assert _state(wh) == first


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_merge_order_does_not_change_the_outcome(warehouse_path, order):
    files = [_rows(("p1", "failed", 1, "r1"), ("p2", "failed", 1, "r1")),
             _rows(("p1", "failed", 2, "r2"), ("p2", "ok", 2, "r2")),
             _rows(("p1", "ok", 3, "r3"), ("p2", "failed", 3, "r3"))]
    with Warehouse(warehouse_path) as wh:
        for i in order:
            wh.judging.merge_result_file(f"f{i}", f"d{i}", files[i])
        assert _state(wh) == [("p1", "ok", 3, "r3"), ("p2", "ok", 2, "r2")]


def test_worker_run_records_go_forward_only(warehouse_path):
    record = {"run_id": "r1", "judge_config_id": "jc", "strategy": "swap", "endpoints": ["http://x/v1"],
              "shard": "0/2", "started_at": "2026-01-01 00:00:00", "status": "running"}
    with Warehouse(warehouse_path) as wh:
        wh.runs.record_judge_run(record)
        wh.runs.mark_judge_run("r1", "lost", "worker gone")
        assert wh.query("SELECT status, error FROM judge_runs") == [("lost", "worker gone")]
        wh.runs.record_judge_run(record)  # the stale 'running' record does not bring it back
        assert wh.query("SELECT status FROM judge_runs") == [("lost",)]
        wh.runs.record_judge_run({**record, "status": "completed", "finished_at": "2026-01-01 00:10:00",
                             "summary": {"judged": 4}})
        assert wh.query("SELECT status, summary->>'judged' FROM judge_runs") == [("completed", "4")]
