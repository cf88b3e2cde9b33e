"""The warehouse: the only code that speaks SQL. One DuckDB file, numbered migrations, named queries.

DuckDB lets one process open a file read-write and nobody else open it at all meanwhile; a locked file
is reported as `WarehouseLockedError`, naming the process that holds it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from common.errors import NotFoundError, UserError
from common.processes import process_alive, this_process

JUDGMENT_TABLES = {"judgments": "judgments", "eval_judgments": "eval_judgments"}  # the only names SQL may see


class WarehouseLockedError(UserError, RuntimeError):
    """Another process holds the warehouse file."""


class WarehouseUnreadableError(UserError):
    """The warehouse file is not a DuckDB database any more (truncated, overwritten, corrupt)."""


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _holder(message: str) -> str:
    """'PID 123 (curate ingest ...)' from DuckDB's lock message, as much as can be found."""
    m = re.search(r"PID (\d+)", message)
    if not m:
        return "another process"
    pid = m.group(1)
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        cmd = ""
    return f"process {pid}" + (f" ({cmd})" if cmd else "")


# What DuckDB raises on a file that is not (or no longer) a whole database.
_DAMAGE = (duckdb.SerializationException, duckdb.InternalException)


def _unreadable(path: Path, err: Exception) -> WarehouseUnreadableError:
    reason = str(err).splitlines()[0].removeprefix("IO Error: ")[:200]
    return WarehouseUnreadableError(
        f"the warehouse {path} is not readable as a DuckDB database ({reason}); nothing was changed. "
        "Restore it from a backup, or move it aside to start a new one")


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration file, in order."""
    out = []
    for entry in resources.files("warehouse").joinpath("migrations").iterdir():
        m = re.match(r"(\d+)_(\w+)\.sql$", entry.name)
        if m:
            out.append((int(m.group(1)), m.group(2), entry.read_text()))
    return sorted(out)


class Warehouse:
    def __init__(self, path: Path | str, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self.path.exists():
            raise NotFoundError(f"no warehouse at {self.path}: run `curate ingest` first")
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as err:
            if "lock" in str(err).lower():
                raise WarehouseLockedError(
                    f"the warehouse {self.path} is in use by {_holder(str(err))}; DuckDB allows one writer "
                    "and no reader beside it: wait for that run to finish, or use another CURATE_WAREHOUSE"
                ) from None
            raise _unreadable(self.path, err) from None
        except _DAMAGE as err:
            raise _unreadable(self.path, err) from None
        try:
            if read_only:
                self.schema_version()  # reads the catalog and a table: damage shows here, not mid-command
            else:
                self.migrate()
                self.mark_interrupted_runs()
        except (duckdb.IOException, *_DAMAGE) as err:
            self.con.close()
            raise _unreadable(self.path, err) from None

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- schema ---------------------------------------------------------------------------------
    def migrate(self) -> list[int]:
        """Apply the migrations not applied yet, each in its own transaction; return their versions."""
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
            "applied_at TIMESTAMP NOT NULL)"
        )
        done = {v for (v,) in self.con.execute("SELECT version FROM schema_migrations").fetchall()}
        applied = []
        for version, name, sql in migrations():
            if version in done:
                continue
            with self.transaction():
                self.con.execute(sql)
                self.con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [version, name, _now()])
            applied.append(version)
        return applied

    def schema_version(self) -> int:
        return self.con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    @contextmanager
    def _registered(self, view: str, data: pa.Table) -> Iterator[None]:
        """An Arrow table visible to SQL as `view` for the duration of the block."""
        self.con.register(view, data)
        try:
            yield
        finally:
            self.con.unregister(view)

    def _insert(self, table: str, data: pa.Table, tail: str = "") -> None:
        """INSERT an Arrow table's columns into `table` (a name fixed in this module, never input)."""
        cols = ", ".join(f'"{c}"' for c in data.column_names)
        with self._registered("batch_rows", data):
            self.con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM batch_rows {tail}")

    # -- ingest runs ------------------------------------------------------------------------------
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
        self.con.execute(
            "UPDATE ingest_runs SET finished_at = ?, status = ?, summary = ?, error = ? WHERE run_id = ?",
            [_now(), status, json.dumps(summary), error, run_id],
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

    # -- look-ups for one batch -------------------------------------------------------------------
    def _matching(self, sql: str, keys: pa.Table, params: list[Any] | None = None) -> list[tuple]:
        """Run `sql` with `keys` visible as `lookup_keys` (a join against a batch's ids)."""
        with self._registered("lookup_keys", keys):
            return self.con.execute(sql, params or []).fetchall()

    def known_pair_ids(self, pair_ids: list[str]) -> dict[str, str]:
        """{pair id: md5 of its response A} for the given ids already in the warehouse."""
        if not pair_ids:
            return {}
        rows = self._matching(
            "SELECT p.pair_id, md5(p.response_a) FROM candidate_pairs p JOIN lookup_keys k USING (pair_id)",
            pa.table({"pair_id": pa.array(pair_ids, pa.string())}),
        )
        return dict(rows)

    def known_sightings(self, source: str, keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """{(source_id, pair_id): ingest run id} for the keys of this source already recorded."""
        if not keys:
            return {}
        rows = self._matching(
            "SELECT s.source_id, s.pair_id, s.ingest_run_id FROM pair_sightings s "
            "JOIN lookup_keys k USING (source_id, pair_id) WHERE s.source = ?",
            pa.table({"source_id": [k[0] for k in keys], "pair_id": [k[1] for k in keys]}), [source],
        )
        return {(a, b): run for a, b, run in rows}

    def known_quarantine(self, source: str, keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """(row_hash, position) keys of this source already quarantined."""
        if not keys:
            return set()
        rows = self._matching(
            "SELECT q.row_hash, q.position FROM quarantine q JOIN lookup_keys k USING (row_hash, position) "
            "WHERE q.source = ?",
            pa.table({"row_hash": [k[0] for k in keys], "position": [k[1] for k in keys]}), [source],
        )
        return {(a, b) for a, b in rows}

    # -- writing one ingest batch (one transaction) -----------------------------------------------
    def write_ingest_batch(
        self,
        *,
        pairs: pa.Table | None,
        sightings: pa.Table | None,
        quarantine: pa.Table | None,
        near_duplicates: pa.Table | None,
        signatures: pa.Table | None,
        contamination: pa.Table | None,
    ) -> None:
        """Insert everything one batch produced, all or nothing. Keys already present are left alone."""
        statements = [
            ("candidate_pairs", pairs),
            ("pair_sightings", sightings),
            ("quarantine", quarantine),
            ("near_duplicates", near_duplicates),
            ("pair_signatures", signatures),
            ("contamination", contamination),
        ]
        with self.transaction():
            for table, data in statements:
                if data is not None and data.num_rows:
                    self._insert(table, data, "ON CONFLICT DO NOTHING")

    # -- near-duplicate index ---------------------------------------------------------------------
    def kept_signatures(self, num_perm: int) -> tuple[list[str], np.ndarray]:
        """Signatures of kept pairs computed with `num_perm` bins, for the near-duplicate index."""
        tbl = self.con.sql(
            "SELECT pair_id, signature FROM pair_signatures WHERE num_perm = ? ORDER BY pair_id", params=[num_perm]
        ).to_arrow_table()
        ids = tbl.column("pair_id").to_pylist()
        if not ids:
            return [], np.empty((0, num_perm), np.uint32)
        blob = b"".join(tbl.column("signature").to_pylist())
        return ids, np.frombuffer(blob, dtype="<u4").reshape(len(ids), num_perm).copy()

    # -- evaluation prompts and contamination -----------------------------------------------------
    def upsert_eval_prompts(self, benchmark: str, rows: list[tuple[str, str]], revision: str) -> int:
        """Store (benchmark_id, prompt) rows; return how many were new."""
        before = self.count_eval_prompts(benchmark)
        table = pa.table(
            {
                "benchmark": [benchmark] * len(rows),
                "benchmark_id": [r[0] for r in rows],
                "prompt": [r[1] for r in rows],
                "source_revision": [revision] * len(rows),
                "loaded_at": pa.array([_now()] * len(rows), pa.timestamp("us")),
            }
        )
        self.write_table("eval_prompts", table, on_conflict="update prompt, source_revision, loaded_at")
        return self.count_eval_prompts(benchmark) - before

    def write_table(self, table: str, data: pa.Table, on_conflict: str = "nothing") -> None:
        """Insert an Arrow table into one of this module's tables, in a transaction."""
        if table not in {"eval_prompts", "contamination"}:
            raise ValueError(f"write_table does not write {table}")
        if on_conflict == "nothing":
            tail = "ON CONFLICT DO NOTHING"
        else:
            fields = [f.strip() for f in on_conflict.removeprefix("update").split(",")]
            tail = "ON CONFLICT DO UPDATE SET " + ", ".join(f"{f} = excluded.{f}" for f in fields)
        with self.transaction():
            self._insert(table, data, tail)

    def count_eval_prompts(self, benchmark: str | None = None) -> int:
        if benchmark is None:
            return self.con.execute("SELECT count(*) FROM eval_prompts").fetchone()[0]
        return self.con.execute("SELECT count(*) FROM eval_prompts WHERE benchmark = ?", [benchmark]).fetchone()[0]

    def eval_prompts(self) -> list[tuple[str, str, str]]:
        return self.con.execute(
            "SELECT benchmark, benchmark_id, prompt FROM eval_prompts ORDER BY benchmark, benchmark_id"
        ).fetchall()

    def eval_prompt_counts(self) -> dict[str, int]:
        return dict(self.con.execute("SELECT benchmark, count(*) FROM eval_prompts GROUP BY benchmark ORDER BY 1").fetchall())

    def iter_pair_histories(self, batch_size: int = 10_000) -> Iterable[tuple[list[str], list[list[dict]]]]:
        """(pair ids, histories) of every candidate pair, in batches (for re-checking contamination)."""
        cur = self.con.cursor()  # its own cursor: the caller may write between batches
        cur.execute("SELECT pair_id, history FROM candidate_pairs ORDER BY pair_id")
        while rows := cur.fetchmany(batch_size):
            yield [r[0] for r in rows], [r[1] for r in rows]

    def count_contaminated(self) -> int:
        return self.con.execute("SELECT count(DISTINCT pair_id) FROM contamination").fetchone()[0]

    # -- source pins ------------------------------------------------------------------------------
    def source_pin(self, source: str) -> str | None:
        row = self.con.execute("SELECT revision FROM source_pins WHERE source = ?", [source]).fetchone()
        return row[0] if row else None

    def set_source_pin(self, source: str, hub_id: str, revision: str) -> None:
        self.con.execute(
            "INSERT INTO source_pins VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET hub_id = excluded.hub_id, "
            "revision = excluded.revision, pinned_at = excluded.pinned_at",
            [source, hub_id, revision, _now()],
        )

    # -- judging -----------------------------------------------------------------------------------
    def register_judge_config(self, config: dict[str, Any]) -> None:
        """A configuration's fields (`judge_config_id`, model, ..., simulated), recorded once."""
        self.con.execute(
            "INSERT INTO judge_configs (judge_config_id, model, served_revision, prompt_version, temperature, top_p, "
            "max_tokens, created_at, simulated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [config["judge_config_id"], config["model"], config["served_revision"], config["prompt_version"],
             config["temperature"], config["top_p"], config["max_tokens"], _now(), bool(config.get("simulated"))],
        )

    def start_judge_run(self, run_id: str, config_id: str, strategy: str, endpoints: list[str], shard: str | None) -> None:
        self.con.execute(
            "INSERT INTO judge_runs (run_id, judge_config_id, strategy, endpoints, shard, started_at, status, pid, host) "
            "VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            [run_id, config_id, strategy, endpoints, shard, _now(), *this_process()],
        )

    def finish_judge_run(self, run_id: str, status: str, summary: dict, error: str | None = None) -> None:
        self.con.execute(
            "UPDATE judge_runs SET finished_at = ?, status = ?, summary = ?, error = ? WHERE run_id = ?",
            [_now(), status, json.dumps(summary, default=str), error, run_id],
        )

    def curation_pair_ids(self) -> list[str]:
        """Ids of the pairs that go on to judging, in a stable order."""
        return [r[0] for r in self.con.execute("SELECT pair_id FROM pairs_for_curation ORDER BY pair_id").fetchall()]

    def pair_texts(self, pair_ids: list[str]) -> list[tuple[str, list[dict[str, str]], str, str]]:
        """(pair id, history, response A, response B) for the given ids, in the given order."""
        if not pair_ids:
            return []
        rows = self._matching(
            "SELECT p.pair_id, p.history, p.response_a, p.response_b FROM candidate_pairs p JOIN lookup_keys k USING (pair_id)",
            pa.table({"pair_id": pa.array(pair_ids, pa.string())}),
        )
        by_id = {r[0]: (r[0], r[1], r[2], r[3]) for r in rows}
        return [by_id[i] for i in pair_ids if i in by_id]

    def judgment_states(self, config_id: str, pair_ids: list[str], table: str = "judgments") -> dict[tuple[str, str, int], tuple]:
        """{(pair id, order, sample): (status, attempts, margin_a, score_a, score_b, requests, failure_reason)}
        of recorded judgments (of curation pairs, or of benchmark comparisons with table="eval_judgments")."""
        if not pair_ids:
            return {}
        rows = self._matching(
            'SELECT j.pair_id, j."order", j.sample_index, j.status, j.attempts, j.margin_a, j.score_a, j.score_b, '
            "coalesce(j.requests, j.attempts), j.failure_reason "
            f"FROM {JUDGMENT_TABLES[table]} j JOIN lookup_keys k USING (pair_id) WHERE j.judge_config_id = ?",
            pa.table({"pair_id": pa.array(pair_ids, pa.string())}), [config_id],
        )
        return {(r[0], r[1], r[2]): r[3:] for r in rows}

    def write_judgments(self, rows: pa.Table, table: str = "judgments") -> None:
        """Upsert judgments in one transaction: a success replaces an earlier failure; an 'ok' is final."""
        if rows.num_rows == 0:
            return
        with self.transaction():
            self._upsert_judgments(rows, JUDGMENT_TABLES[table])

    def _upsert_judgments(self, rows: pa.Table, table: str = "judgments") -> None:
        # Order-independent, so replaying files in any order ends the same: 'ok' is final, and a failure
        # only replaces a failure with no more attempts behind it.
        key = ("pair_id", "judge_config_id", "order", "sample_index")
        updates = ", ".join(f'"{c}" = excluded."{c}"' for c in rows.column_names if c not in key)
        self._insert(table, rows, f"ON CONFLICT DO UPDATE SET {updates} WHERE {table}.status <> 'ok' "
                                  f"AND (excluded.status = 'ok' OR excluded.attempts >= {table}.attempts)")

    def merged_file_keys(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT file_key FROM merged_result_files").fetchall()}

    def merge_result_file(self, key: str, digest: str, rows: pa.Table) -> bool:
        """Merge one worker batch file and remember it, in one transaction. False if it was merged before
        (a file merged under the same key with other bytes is an error: files are never rewritten)."""
        with self.transaction():
            seen = self.con.execute("SELECT digest FROM merged_result_files WHERE file_key = ?", [key]).fetchone()
            if seen is not None:
                if seen[0] != digest:
                    raise ValueError(f"{key} was merged before with other content ({seen[0]} != {digest})")
                return False
            if rows.num_rows:
                self._upsert_judgments(rows)
            self.con.execute("INSERT INTO merged_result_files VALUES (?, ?, ?, ?)", [key, digest, rows.num_rows, _now()])
        return True

    def record_judge_run(self, record: dict[str, Any]) -> None:
        """A worker's run record from the exchange folder: inserted, or brought up to date (never back)."""
        self.con.execute(
            "INSERT INTO judge_runs (run_id, judge_config_id, strategy, endpoints, shard, started_at, finished_at, "
            "status, summary, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
            "finished_at = excluded.finished_at, status = excluded.status, summary = excluded.summary, "
            "error = excluded.error WHERE judge_runs.status IN ('running', 'lost') AND excluded.status <> 'running'",
            [record["run_id"], record["judge_config_id"], record["strategy"], record["endpoints"], record["shard"],
             record["started_at"], record.get("finished_at"), record["status"],
             json.dumps(record.get("summary") or {}, default=str), record.get("error")],
        )

    def mark_judge_run(self, run_id: str, status: str, error: str) -> None:
        """Close a run that can no longer finish itself (its worker was lost)."""
        self.con.execute("UPDATE judge_runs SET status = ?, error = ?, finished_at = ? WHERE run_id = ? "
                         "AND status = 'running'", [status, error, _now(), run_id])

    def served_models(self, run_id: str) -> list[str]:
        """The model names servers answered with in a judge run (a stand-in says SIMULATED here)."""
        return [r[0] for r in self.con.execute(
            "SELECT DISTINCT served_model FROM judgments WHERE judge_run_id = ? AND served_model IS NOT NULL ORDER BY 1",
            [run_id]).fetchall()]

    def judged_by_source(self, config_id: str) -> dict[str, int]:
        """Pairs going on to curation that hold at least one 'ok' verdict under `config_id`, per source."""
        return dict(self.con.execute(
            "SELECT p.source, count(*) FROM pairs_for_curation p WHERE EXISTS (SELECT 1 FROM judgments j "
            "WHERE j.pair_id = p.pair_id AND j.judge_config_id = ? AND j.status = 'ok') GROUP BY p.source",
            [config_id]).fetchall())

    def eval_margins(self, config_id: str, item_ids: list[str]) -> dict[str, dict[tuple[str, int], float]]:
        """{item id: {(order, sample): A-side margin}} of the 'ok' benchmark judgments under `config_id`."""
        rows = self._matching(
            'SELECT j.pair_id, j."order", j.sample_index, j.margin_a FROM eval_judgments j JOIN lookup_keys k '
            "USING (pair_id) WHERE j.judge_config_id = ? AND j.status = 'ok'",
            pa.table({"pair_id": pa.array(item_ids, pa.string())}), [config_id])
        out: dict[str, dict[tuple[str, int], float]] = {}
        for item, order, sample, margin in rows:
            out.setdefault(item, {})[(order, sample)] = margin
        return out

    def record_evaluation(self, row: dict[str, Any]) -> None:
        row = {**row, "created_at": _now()}
        cols = list(row)
        self.con.execute(f"INSERT INTO judge_evaluations ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                         [json.dumps(v) if k == "result" else v for k, v in row.items()])

    def judging_totals(self, config_id: str) -> dict[str, Any]:
        """Requests, tokens and request-seconds of every judgment recorded under `config_id` so far."""
        row = self.con.execute(
            "SELECT count(*), coalesce(sum(requests), 0), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), "
            "coalesce(sum(latency_s), 0) FROM judgments WHERE judge_config_id = ?", [config_id]).fetchone()
        return dict(zip(("judgments", "requests", "tokens_in", "tokens_out", "request_seconds"), row))

    def judgment_counts(self, config_id: str) -> dict[str, int]:
        return dict(self.con.execute(
            "SELECT status, count(*) FROM judgments WHERE judge_config_id = ? GROUP BY status", [config_id]
        ).fetchall())

    # -- dataset versions ----------------------------------------------------------------------------
    def latest_judge_config_id(self) -> str | None:
        row = self.con.execute(
            "SELECT judge_config_id FROM judgments WHERE status = 'ok' GROUP BY judge_config_id "
            "ORDER BY max(finished_at) DESC LIMIT 1"
        ).fetchone()
        return row[0] if row else None

    def judged_pairs(self, config_id: str) -> list[dict[str, Any]]:
        """Every pair that is not a near duplicate, with its ok verdicts under `config_id` and whether it is
        contaminated (the policy decides what to do with that)."""
        cur = self.con.execute(
            """
            SELECT p.pair_id, p.source, p.source_id, p.source_revision, p.history, p.response_a, p.response_b,
                   p.human_label, p.both_bad, p.domain, p.language,
                   EXISTS (SELECT 1 FROM contamination c WHERE c.pair_id = p.pair_id) AS contaminated,
                   coalesce(list(struct_pack(o := j."order", s := j.sample_index, score_a := j.score_a,
                                             score_b := j.score_b, ranking_a := j.ranking_a, margin := j.margin_a)
                                 ORDER BY j."order", j.sample_index)
                            FILTER (WHERE j.pair_id IS NOT NULL), []) AS verdicts
            FROM candidate_pairs p
            LEFT JOIN judgments j ON j.pair_id = p.pair_id AND j.judge_config_id = ? AND j.status = 'ok'
            WHERE NOT EXISTS (SELECT 1 FROM near_duplicates n WHERE n.pair_id = p.pair_id)
            GROUP BY ALL
            ORDER BY p.pair_id
            """,
            [config_id],
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def version_inputs(self, config_id: str) -> str:
        """A fingerprint of everything a version is built from (pairs, near duplicates, contamination, the
        configuration's verdicts): equal fingerprints and policy mean equal content, without reading a row."""
        row = self.con.execute(
            """
            SELECT (SELECT count(*) FROM candidate_pairs) || '/' || (SELECT count(*) FROM near_duplicates) || '/' ||
                   (SELECT count(*) FROM contamination) || '/' ||
                   (SELECT count(*) || ':' || coalesce(max(finished_at)::VARCHAR, '') FROM judgments
                    WHERE judge_config_id = ? AND status = 'ok')
            """,
            [config_id],
        ).fetchone()
        return f"{config_id}/{row[0]}"

    def latest_version(self, name: str) -> dict[str, Any] | None:
        cur = self.con.execute(
            "SELECT name, version, content_hash, row_count, created_at, judge_config_id, policy, "
            "json_extract_string(stats, '$.inputs') AS inputs FROM dataset_versions "
            "WHERE name = ? ORDER BY version DESC LIMIT 1",
            [name],
        )
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else None

    def write_version(self, meta: dict[str, Any], rows: pa.Table) -> None:
        """A new version and its rows, in one transaction: a version is there whole or not at all."""
        with self.transaction():
            self.con.execute(
                "INSERT INTO dataset_versions (name, version, parent_version, created_at, judge_config_id, policy, "
                "source_revisions, row_count, content_hash, stats, simulated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [meta["name"], meta["version"], meta["parent_version"], _now(), meta["judge_config_id"],
                 json.dumps(meta["policy"]), json.dumps(meta["source_revisions"]), meta["row_count"],
                 meta["content_hash"], json.dumps(meta["stats"], default=str), bool(meta.get("simulated"))],
            )
            self._insert("dataset_rows", rows)

    def version_with_content(self, name: str, content_hash: str, config_id: str) -> dict[str, Any] | None:
        """An earlier version of `name` with exactly this content from this judge configuration."""
        cur = self.con.execute(
            "SELECT version, row_count, created_at FROM dataset_versions WHERE name = ? AND content_hash = ? "
            "AND judge_config_id = ? ORDER BY version LIMIT 1", [name, content_hash, config_id])
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else None

    def config_is_simulated(self, config_id: str) -> bool:
        """Whether the stand-in answered for this configuration: flagged so, or any verdict's model says so."""
        return bool(self.con.execute(
            "SELECT coalesce((SELECT simulated FROM judge_configs WHERE judge_config_id = $1), false) OR EXISTS "
            "(SELECT 1 FROM judgments WHERE judge_config_id = $1 AND served_model LIKE '%SIMULATED%')",
            [config_id]).fetchone()[0])

    def versions(self, name: str | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(
            "SELECT name, version, parent_version, created_at, row_count, content_hash, judge_config_id, "
            "published_target, published_tag, simulated FROM dataset_versions WHERE (? IS NULL OR name = ?) "
            "ORDER BY name, version",
            [name, name],
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def version_meta(self, name: str, version: int | None = None) -> dict[str, Any] | None:
        """One version's record (the latest when `version` is None), JSON fields decoded."""
        cur = self.con.execute(
            "SELECT * FROM dataset_versions WHERE name = ? AND (? IS NULL OR version = ?) ORDER BY version DESC LIMIT 1",
            [name, version, version],
        )
        row = cur.fetchone()
        if row is None:
            return None
        meta = dict(zip([d[0] for d in cur.description], row))
        for key in ("policy", "source_revisions", "stats"):
            meta[key] = json.loads(meta[key]) if isinstance(meta[key], str) else meta[key]
        return meta

    def judge_config(self, config_id: str) -> dict[str, Any]:
        cur = self.con.execute("SELECT * FROM judge_configs WHERE judge_config_id = ?", [config_id])
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else {"judge_config_id": config_id}

    def mark_published(self, name: str, version: int, target: str, tag: str | None, commit: str | None) -> None:
        self.con.execute(
            "UPDATE dataset_versions SET published_target = ?, published_tag = ?, published_commit = ?, published_at = ? "
            "WHERE name = ? AND version = ?",
            [target, tag, commit, _now(), name, version],
        )

    def version_rows(self, name: str, version: int) -> list[dict[str, Any]]:
        cur = self.con.execute(
            "SELECT * EXCLUDE (name, version) FROM dataset_rows WHERE name = ? AND version = ? ORDER BY pair_id",
            [name, version],
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    # -- counts for summaries and tests -----------------------------------------------------------
    def counts(self) -> dict[str, int]:
        tables = ["candidate_pairs", "pair_sightings", "quarantine", "near_duplicates", "contamination", "ingest_runs"]
        out = {}
        for t in tables:  # fixed names, not input
            out[t] = self.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        out["pairs_for_curation"] = self.con.execute("SELECT count(*) FROM pairs_for_curation").fetchone()[0]
        return out

    def judging_status(self) -> list[dict[str, Any]]:
        """Per judge configuration: judgments ok and failed, curation pairs with a verdict and still pending."""
        cur = self.con.execute(
            "WITH per AS (SELECT judge_config_id, count(*) FILTER (WHERE status = 'ok') AS ok, "
            "count(*) FILTER (WHERE status <> 'ok') AS failed FROM judgments GROUP BY 1) "
            "SELECT c.judge_config_id, c.model, coalesce(c.simulated, false) AS simulated, coalesce(per.ok, 0) AS ok, "
            "coalesce(per.failed, 0) AS failed, (SELECT count(*) FROM pairs_for_curation p WHERE NOT EXISTS (SELECT 1 "
            "FROM judgments j WHERE j.pair_id = p.pair_id AND j.judge_config_id = c.judge_config_id AND "
            "j.status = 'ok')) AS pairs_pending FROM judge_configs c LEFT JOIN per USING (judge_config_id) "
            "WHERE per.judge_config_id IS NOT NULL ORDER BY c.created_at")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        """Read-only ad-hoc access for tests and the CLI's inspection commands."""
        return self.con.execute(sql, params or []).fetchall()
