"""The dashboard's snapshot: the dashboard views copied into their own DuckDB file.

DuckDB lets nobody read a file while another process writes it, and a pipeline writes for hours. So the
dashboard never opens the warehouse: after each stage (when the stage has closed it), the pipeline copies
every dashboard view into a new file and renames it over the snapshot. Readers keep the file they opened;
the next page load sees the new one.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from common.settings import settings_with

DASHBOARD_VIEWS = (
    "dash_runs", "dash_funnel", "quarantine_reasons", "dash_margin_histogram", "dash_confidence_histogram",
    "dash_agreement", "dash_judge_failures", "dash_judge_throughput", "dash_versions", "dash_version_costs",
    "dash_judge_evaluations", "dash_judge_configs", "dash_version_quality", "dash_reliability",
    "dash_model_families", "dash_review_progress", "dash_certification", "dash_personal_data",
)


def snapshot_path(warehouse: Path | str, configured: Path | str | None = None) -> Path:
    """CURATE_DASHBOARD_SNAPSHOT, else dashboard.duckdb beside the warehouse."""
    return Path(configured) if configured else Path(warehouse).with_name("dashboard.duckdb")


def refresh_dashboard(warehouse: Path | str, stage: str) -> dict[str, Any] | None:
    """Refresh the snapshot of `warehouse` where its settings put it (`snapshot_path`), with the throughput and
    GPUs per server its cost columns assume; nothing when the warehouse does not exist yet."""
    settings = settings_with(warehouse=str(warehouse))
    if not Path(warehouse).exists():
        return None
    return refresh_snapshot(warehouse, snapshot_path(warehouse, settings.dashboard_snapshot), stage,
                            {"server_tokens_per_second": settings.cost_server_tokens_per_second,
                             "gpus_per_server": settings.gpus_per_server})


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def refresh_snapshot(warehouse: Path | str, snapshot: Path | str, stage: str, cost: dict[str, Any]) -> dict[str, Any]:
    """Copy the dashboard views of `warehouse` into `snapshot` (atomically); returns the rows per view."""
    warehouse, snapshot = Path(warehouse), Path(snapshot)
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    tmp = snapshot.with_name(f".{snapshot.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    counts: dict[str, int] = {}
    con = duckdb.connect(str(tmp))
    try:
        con.execute(f"ATTACH {_sql_string(str(warehouse.resolve()))} AS wh (READ_ONLY)")
        for view in DASHBOARD_VIEWS:
            con.execute(f"CREATE TABLE {view} AS SELECT * FROM wh.main.{view}")
            counts[view] = con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
        con.execute("CREATE TABLE snapshot_info (taken_at TIMESTAMP, warehouse VARCHAR, stage VARCHAR, cost_model JSON)")
        con.execute("INSERT INTO snapshot_info VALUES (?, ?, ?, ?)",
                    [datetime.now(timezone.utc).replace(tzinfo=None), str(warehouse.resolve()), stage, json.dumps(cost)])
        con.execute("DETACH wh")
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    con.close()
    os.replace(tmp, snapshot)
    Path(f"{tmp}.wal").unlink(missing_ok=True)
    return counts
