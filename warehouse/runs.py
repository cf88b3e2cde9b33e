"""Runs of every kind: started, finished, interrupted (their process is gone, or was stopped by a signal)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from common.processes import process_alive, stop_requested, this_process
from warehouse.connection import Part, _now

_INTERRUPTED = "interrupted: its command was stopped (Ctrl-C or SIGTERM) before the run finished"


def _closing(status: str, error: str | None) -> tuple[str, str | None, datetime | None]:
    """(status, error, interrupted_at) of a run that ends now: one that fails because its process was asked
    to stop was interrupted."""
    if status == "failed" and stop_requested() is not None:
        return "interrupted", _INTERRUPTED + (f" ({error})" if error else ""), _now()
    return status, error, None


@dataclass
class RunOutcome:
    """What a recorded run ends with: its `summary` once complete; `so_far()` says what a failing run had done."""

    summary: dict[str, Any] = field(default_factory=dict)
    so_far: Callable[[], dict[str, Any]] = dict


class RunRecords(Part):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    @contextmanager
    def recorded_run(self, kind: Literal["ingest", "judge"], run_id: str, **start: Any) -> Iterator[RunOutcome]:
        """A run of `kind` recorded around the block: started now (`start` holds the start method's arguments),
        completed with the summary the block leaves in the outcome, or failed (interrupted after a stop signal)
        with what it had done and the error, which is raised on."""
        {"ingest": self.start_ingest_run, "judge": self.start_judge_run}[kind](run_id, **start)
        finish = {"ingest": self.finish_ingest_run, "judge": self.finish_judge_run}[kind]
        outcome = RunOutcome()
        try:
            yield outcome
        except BaseException as err:
            finish(run_id, "failed", outcome.so_far(), error=f"{type(err).__name__}: {err}")
            raise
        finish(run_id, "completed", outcome.summary)

    def start_ingest_run(self, run_id: str, source: str, location: str, revision: str, settings: dict) -> None:
        self.con.execute(
            "INSERT INTO ingest_runs (run_id, source, location, source_revision, started_at, status, settings, pid, "
            "host) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)",
            [run_id, source, location, revision, _now(), json.dumps(settings, default=str), *this_process()],
        )

    def mark_interrupted_runs(self) -> int:
        """Runs left `running` by a process of this host that is gone (killed, crashed) become `interrupted`,
        with the time it was noticed. Runs of other hosts (GPU workers) are left to their own liveness
        checks. Returns how many were marked."""
        host = this_process()[1]
        marked = 0
        for table in ("ingest_runs", "judge_runs"):
            rows = self.con.execute(
                f"SELECT run_id, pid FROM {table} WHERE status = 'running' AND host = ? AND pid IS NOT NULL", [host]
            ).fetchall()
            gone = [run_id for run_id, pid in rows if not process_alive(pid)]
            for run_id in gone:
                self.con.execute(
                    f"UPDATE {table} SET status = 'interrupted', interrupted_at = ?, error = coalesce(error, ?) "
                    "WHERE run_id = ? AND status = 'running'",
                    [_now(), "interrupted: its process ended before the run finished (killed or crashed)", run_id])
            marked += len(gone)
        return marked

    def mark_own_runs_interrupted(self, since: datetime) -> int:
        """Runs this process started at or after `since` that did not complete become `interrupted`: how a
        command stopped by Ctrl-C or SIGTERM leaves its runs (the failure its stop caused included). Returns
        how many of its runs are interrupted now."""
        pid, host = this_process()
        interrupted = 0
        for table in ("ingest_runs", "judge_runs"):
            mine = "WHERE pid = ? AND host = ? AND started_at >= ?"
            self.con.execute(
                f"UPDATE {table} SET status = 'interrupted', interrupted_at = ?, "
                "finished_at = coalesce(finished_at, ?), error = ? || coalesce(' (' || error || ')', '') "
                f"{mine} AND status IN ('running', 'failed')",
                [_now(), _now(), _INTERRUPTED, pid, host, since])
            interrupted += self.con.execute(f"SELECT count(*) FROM {table} {mine} AND status = 'interrupted'",
                                            [pid, host, since]).fetchone()[0]
        return interrupted

    def interrupted_runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """Interrupted ingest and judge runs, newest first; a reader (which marks nothing) also sees runs still
        `running` whose process of this host is gone, with `interrupted_at` not yet recorded."""
        host = this_process()[1]
        cur = self.con.execute(
            "SELECT 'ingest' AS kind, run_id, source AS subject, started_at, interrupted_at, pid, host, status "
            "FROM ingest_runs WHERE status IN ('interrupted', 'running') UNION ALL SELECT 'judge', run_id, "
            "coalesce('shard ' || shard, 'all pairs'), started_at, interrupted_at, pid, host, status FROM judge_runs "
            "WHERE status IN ('interrupted', 'running') ORDER BY started_at DESC", [])
        cols = [d[0] for d in cur.description]
        runs = [dict(zip(cols, row)) for row in cur.fetchall()]
        gone = [r for r in runs if r["status"] == "interrupted" or (
            r["host"] == host and r["pid"] is not None and not process_alive(r["pid"]))]
        return [{k: v for k, v in r.items() if k != "status"} for r in gone[:limit]]

    def finish_ingest_run(self, run_id: str, status: str, summary: dict, error: str | None = None) -> None:
        status, error, interrupted_at = _closing(status, error)
        self.con.execute(
            "UPDATE ingest_runs SET finished_at = ?, status = ?, summary = ?, error = ?, "
            "interrupted_at = coalesce(?, interrupted_at) WHERE run_id = ?",
            [_now(), status, json.dumps(summary), error, interrupted_at, run_id],
        )

    def ingest_runs(self, limit: int = 20) -> list[dict[str, Any]]:
        cur = self.con.execute(
            "SELECT run_id, source, location, source_revision, started_at, finished_at, status, summary, error, pid, "
            "host, interrupted_at FROM ingest_runs ORDER BY started_at DESC LIMIT ?",
            [limit],
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    def completed_full_ingest(self, source: str, revision: str) -> str | None:
        """The id of a completed ingest run that read all of `source` at `revision` (no row limit)."""
        row = self.con.execute(
            "SELECT run_id FROM ingest_runs WHERE source = ? AND source_revision = ? AND status = 'completed' "
            "AND json_extract_string(settings, '$.limit') IS NULL AND coalesce(json_extract_string(summary, '$.read')::BIGINT, 0) > 0 "
            "ORDER BY started_at LIMIT 1",
            [source, revision],
        ).fetchone()
        return row[0] if row else None

    def synthetic_reads(self) -> set[tuple[str, str]]:
        """(source, revision) of every ingest run that read rows `curate synth` wrote (its summary says so)."""
        return {tuple(r) for r in self.con.execute(
            "SELECT DISTINCT source, source_revision FROM ingest_runs "
            "WHERE json_extract_string(summary, '$.synthetic') = 'true'").fetchall()}

    def any_completed_full_ingest(self, source: str) -> bool:
        """Whether any revision of `source` was read in full (else no ingest of it can be a no-op)."""
        return self.con.execute(
            "SELECT count(*) > 0 FROM ingest_runs WHERE source = ? AND status = 'completed' "
            "AND json_extract_string(settings, '$.limit') IS NULL", [source],
        ).fetchone()[0]

    def start_judge_run(self, run_id: str, config_id: str, strategy: str, endpoints: list[str], shard: str | None,
                        one_order_on_purpose: bool = False) -> None:
        """`one_order_on_purpose`: what the strategy declares, read by the curation (see migration 016)."""
        self.con.execute(
            "INSERT INTO judge_runs (run_id, judge_config_id, strategy, endpoints, shard, started_at, status, pid, host, "
            "one_order_on_purpose) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
            [run_id, config_id, strategy, endpoints, shard, _now(), *this_process(), one_order_on_purpose],
        )

    def finish_judge_run(self, run_id: str, status: str, summary: dict, error: str | None = None) -> None:
        status, error, interrupted_at = _closing(status, error)
        self.con.execute(
            "UPDATE judge_runs SET finished_at = ?, status = ?, summary = ?, error = ?, "
            "interrupted_at = coalesce(?, interrupted_at) WHERE run_id = ?",
            [_now(), status, json.dumps(summary, default=str), error, interrupted_at, run_id],
        )

    def record_judge_run(self, record: dict[str, Any]) -> None:
        """A worker's run record from the exchange folder: inserted, or brought up to date (never back).
        `one_order_on_purpose` is the merge's reading of its strategy (the record does not carry it)."""
        self.con.execute(
            "INSERT INTO judge_runs (run_id, judge_config_id, strategy, endpoints, shard, started_at, finished_at, "
            "status, summary, error, one_order_on_purpose) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO "
            "UPDATE SET finished_at = excluded.finished_at, status = excluded.status, summary = excluded.summary, "
            "error = excluded.error WHERE judge_runs.status IN ('running', 'lost') AND excluded.status <> 'running'",
            [record["run_id"], record["judge_config_id"], record["strategy"], record["endpoints"], record["shard"],
             record["started_at"], record.get("finished_at"), record["status"],
             json.dumps(record.get("summary") or {}, default=str), record.get("error"),
             bool(record.get("one_order_on_purpose", False))],
        )

    def judge_run(self, run_id: str) -> dict[str, Any] | None:
        """What is recorded of one judge run (judge_config_id, strategy, shard, status, summary), or None."""
        row = self.con.execute("SELECT judge_config_id, strategy, shard, status, summary FROM judge_runs "
                               "WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            return None
        return {**dict(zip(("judge_config_id", "strategy", "shard", "status"), row[:4])),
                "summary": json.loads(row[4]) if row[4] else None}

    def judge_run_summaries(self, run_ids: list[str]) -> dict[str, dict[str, Any]]:
        """{run id: its summary} of the given judge runs that recorded one; each run once."""
        if not run_ids:
            return {}
        rows = self.con.execute("SELECT run_id, summary FROM judge_runs WHERE run_id IN (SELECT unnest(?)) AND "
                                "summary IS NOT NULL", [list(run_ids)]).fetchall()
        return {run_id: json.loads(summary) for run_id, summary in rows}

    def mark_judge_run(self, run_id: str, status: str, error: str) -> None:
        """Close a run that can no longer finish itself (its worker was lost)."""
        self.con.execute("UPDATE judge_runs SET status = ?, error = ?, finished_at = ? WHERE run_id = ? "
                         "AND status = 'running'", [status, error, _now(), run_id])
