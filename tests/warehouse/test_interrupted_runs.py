"""A run whose process was killed does not stay `running` forever, and an unreadable warehouse file is
reported by name and never overwritten."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from warehouse.store import Warehouse, WarehouseUnreadableError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _start_runs_and_die(warehouse) -> None:
    """A real process that starts an ingest and a judge run, then is killed with SIGKILL."""
    code = textwrap.dedent(f"""
        import os, signal
        from warehouse.store import Warehouse
        wh = Warehouse({str(warehouse)!r})
        wh.runs.start_ingest_run("ingest-killed", "helpsteer3", "x.jsonl", "file:abc", {{}})
        wh.runs.start_judge_run("judge-killed", "jc-1", "swap", ["http://127.0.0.1:9/v1"], None)
        wh.con.execute("CHECKPOINT")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_runs_of_a_killed_process_are_marked_interrupted_by_the_next_writer(warehouse_path):
    _start_runs_and_die(warehouse_path)
    with Warehouse(warehouse_path, read_only=True) as wh:  # a reader changes nothing, but sees them
        assert wh.query("SELECT status FROM ingest_runs") == [("running",)]
        seen = wh.runs.interrupted_runs()
        assert {r["run_id"] for r in seen} == {"ingest-killed", "judge-killed"}
        assert all(r["interrupted_at"] is None for r in seen)
    with Warehouse(warehouse_path) as wh:
        mine = "ingest-alive"
        wh.runs.start_ingest_run(mine, "arena", "y.jsonl", "file:def", {})
        interrupted = {r["run_id"]: r for r in wh.runs.interrupted_runs()}
        assert set(interrupted) == {"ingest-killed", "judge-killed"}
        assert all(r["interrupted_at"] is not None and r["pid"] for r in interrupted.values())
        assert wh.runs.mark_interrupted_runs() == 0  # this process's own running run is alive: left alone
        assert dict(wh.query("SELECT run_id, status FROM ingest_runs"))[mine] == "running"


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_an_unreadable_warehouse_is_named_and_left_untouched(tmp_path, damage):
    path = tmp_path / "warehouse.duckdb"
    with Warehouse(path) as wh:
        wh.runs.start_ingest_run("r1", "helpsteer3", "x", "file:1", {})
    data = path.read_bytes()
    broken = b"not a database at all " * 100 if damage == "garbage" else data[: len(data) // 3]
    path.write_bytes(broken)
    # a reader may still read what survived a truncation; a writer never opens a damaged file
    for read_only in (False, True) if damage == "garbage" else (False,):
        with pytest.raises(WarehouseUnreadableError, match=f"{path}.*not readable.*nothing was changed"):
            Warehouse(path, read_only=read_only)
    assert path.read_bytes() == broken
