"""The dashboard snapshot: a copy of the views, replaced whole, readable while the warehouse is written."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import duckdb
import pytest

from warehouse import dashboard as data
from warehouse.snapshot import DASHBOARD_VIEWS, refresh_snapshot, snapshot_path
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


def test_snapshot_holds_every_view_and_reads_while_the_warehouse_is_written(dashboard_warehouse, tmp_path):
    warehouse, snap, _ = dashboard_warehouse
    assert snapshot_path(warehouse) == snap and snap.exists()
    copy = tmp_path / "warehouse.duckdb"
    copy.write_bytes(warehouse.read_bytes())
    target = tmp_path / "snap.duckdb"
    counts = refresh_snapshot(copy, target, "test", {"server_tokens_per_second": 1000.0, "gpus_per_server": 8})
    assert set(counts) == set(DASHBOARD_VIEWS) and counts["dash_funnel"] > 0
    with Warehouse(copy, read_only=True) as wh:
        assert counts["dash_versions"] == len(wh.query("SELECT * FROM dash_versions"))

    # a writer holds the warehouse (DuckDB: nobody else may even read it) ...
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time, duckdb
        con = duckdb.connect({str(copy)!r})
        con.execute("CREATE TABLE busy AS SELECT 1")
        print("holding", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(duckdb.IOException):
            duckdb.connect(str(copy), read_only=True)
        # ... and the dashboard's reads go on, from the snapshot
        snapshot = data.Snapshot.open(target)
        assert snapshot.info["stage"] == "test" and snapshot.cost_model["gpus_per_server"] == 8
        assert len(data.funnel(snapshot, data.Filters())) == counts["dash_funnel"]
        # a reader holding the old snapshot is not disturbed by a refresh renaming a new one over it
        reader = duckdb.connect(str(target), read_only=True)
        refresh_snapshot(warehouse, target, "again", {"server_tokens_per_second": 1000.0, "gpus_per_server": 8})
        assert reader.execute("SELECT stage FROM snapshot_info").fetchone() == ("test",)
        reader.close()
        assert data.Snapshot.open(target).info["stage"] == "again"
    finally:
        holder.kill()
        holder.wait()


def test_no_snapshot_is_a_clear_error(tmp_path):
    with pytest.raises(data.NoSnapshotError, match="curate snapshot"):
        data.Snapshot.open(tmp_path / "none.duckdb")
