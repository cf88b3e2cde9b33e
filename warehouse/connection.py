"""The warehouse's one connection: opening the DuckDB file (locked, damaged), migrations, transactions and
the helpers every bounded context's queries use.

DuckDB lets one process open a file read-write and nobody else open it at all meanwhile; a locked file
is reported as `WarehouseLockedError`, naming the process that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from common.errors import InvalidInputError, NotFoundError, UserError

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


def _memory_limit() -> str:
    from common.settings import get_settings

    limit = get_settings().warehouse_memory_limit
    if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", limit.strip(), re.IGNORECASE):
        raise InvalidInputError(f"CURATE_WAREHOUSE_MEMORY_LIMIT must look like 1GB or 512MB, not {limit!r}")
    return limit.strip()


class Connection:
    def __init__(self, path: Path | str, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        memory_limit = self.memory_limit = _memory_limit()  # refused before the file is opened
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
            self.con.execute(f"SET memory_limit = '{memory_limit}'")
            if read_only:
                self.schema_version()  # reads the catalog and a table: damage shows here, not mid-command
            else:
                self.migrate()
                self.after_open_for_writing()
        except (duckdb.IOException, *_DAMAGE) as err:
            self.con.close()
            raise _unreadable(self.path, err) from None

    def after_open_for_writing(self) -> None:
        """What a writer does first (the warehouse marks runs whose process is gone)."""

    def close(self) -> None:
        self.con.close()

    def __enter__(self):  # noqa: ANN204 - the subclass's own type
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

    def _matching(self, sql: str, keys: pa.Table, params: list[Any] | None = None) -> list[tuple]:
        """Run `sql` with `keys` visible as `lookup_keys` (a join against a batch's ids)."""
        with self._registered("lookup_keys", keys):
            return self.con.execute(sql, params or []).fetchall()

    def counts(self) -> dict[str, int]:
        tables = ["candidate_pairs", "pair_sightings", "quarantine", "near_duplicates", "contamination", "ingest_runs"]
        out = {}
        for t in tables:  # fixed names, not input
            out[t] = self.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        out["pairs_for_curation"] = self.con.execute("SELECT count(*) FROM pairs_for_curation").fetchone()[0]
        return out

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        """Read-only ad-hoc access for tests and the CLI's inspection commands."""
        return self.con.execute(sql, params or []).fetchall()
