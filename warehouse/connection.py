"""The warehouse's one connection: opening the DuckDB file (locked, damaged), migrations, transactions and
the helpers every bounded context's queries use.

DuckDB lets one process open a file read-write and nobody else open it at all meanwhile; a locked file
is reported as `WarehouseLockedError`, naming the process that holds it. A file that cannot be written where
it is (a read-only filesystem, no write permission) is `WarehouseReadOnlyError`, and a disk that fills while
writing is `WarehouseDiskFullError`: both are told apart from a damaged file, which they are not.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
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


class WarehouseReadOnlyError(UserError):
    """The warehouse cannot be written where it is: a read-only filesystem, or no permission to write."""

    hint = "copy the warehouse to a writable disk and point CURATE_WAREHOUSE (or --warehouse) at the copy"


class WarehouseDiskFullError(UserError):
    """The disk holding the warehouse filled up while it was written."""

    hint = "free space on that disk (or move the warehouse to a larger one), then run the same command again"


# The OS errors that say the storage, not the file, is the problem. DuckDB's IO errors carry the OS's text for
# the error (strerror), not its number, so both are looked for.
_READ_ONLY_FS = (errno.EROFS,)
_NO_PERMISSION = (errno.EACCES, errno.EPERM)
_FULL = (errno.ENOSPC, errno.EDQUOT)


def storage_errno(err: BaseException) -> int | None:
    """The errno of a failed read or write that the storage caused (read-only, no permission, full), from an
    OSError or from the text of DuckDB's error; None for anything else."""
    codes = (*_READ_ONLY_FS, *_NO_PERMISSION, *_FULL)
    if isinstance(err, OSError) and err.errno in codes:
        return err.errno
    text = str(err)
    return next((code for code in codes if os.strerror(code) in text), None)


def _file_named(err: BaseException) -> str | None:
    """The file an error names: DuckDB quotes it, an OSError carries it."""
    if isinstance(err, OSError) and err.filename:
        return str(err.filename)
    m = re.search(r'file "([^"]+)"', str(err))
    return m.group(1) if m else None


def storage_error(path: Path, err: BaseException, read_only: bool = False) -> UserError | None:
    """The warehouse's own one-line error for a storage problem behind `err`; None when `err` is not one."""
    code = storage_errno(err)
    if code is None:
        return None
    file = _file_named(err) or str(path)
    if code in _FULL:
        return WarehouseDiskFullError(
            f"the disk holding the warehouse {path} is full ({os.strerror(code).lower()} writing {file}): the write "
            "that failed was not kept and everything committed before it is intact; a rerun carries on from there")
    if code in _READ_ONLY_FS:
        where = f" ({file})" if file != str(path) else ""
        return WarehouseReadOnlyError(
            f"the warehouse {path} is on a read-only filesystem{where}: commands that write need a writable "
            "copy; `curate status` and the dashboard (its last snapshot) can read it where it is")
    if read_only:
        unreadable = WarehouseReadOnlyError(f"the warehouse {path} cannot be read by this user ({file}: "
                                            "permission denied)")
        unreadable.hint = "ask for read access to the file, or read a copy"
        return unreadable
    return WarehouseReadOnlyError(
        f"the warehouse {path} is not writable by this user ({file}: permission denied; a writer also needs "
        "to create files beside it): commands that write need write access or a writable copy; `curate status` "
        "and the dashboard (its last snapshot) can read it")


class _NamedStorageErrors:
    """The DuckDB connection, except that a statement failing on the storage (full, read-only, not writable)
    raises the warehouse's one-line error instead of DuckDB's: whichever write meets the full disk (a batch's
    commit, a checkpoint, a run's record), the user reads the same sentence."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, read_only: bool):
        self._con, self._path, self._read_only = con, path, read_only

    def execute(self, *args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        try:
            return self._con.execute(*args, **kwargs)
        except duckdb.Error as err:
            named = storage_error(self._path, err, self._read_only)
            if named is None:
                raise
            raise named from err

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # a copy made without __init__ must not recurse looking for _con
            raise AttributeError(name)
        return getattr(self._con, name)


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


def _open_error(path: Path, err: Exception, read_only: bool) -> UserError:
    """What opening the file failed on: the lock, the storage, else the file itself."""
    if isinstance(err, duckdb.IOException) and re.search(r"Could not set lock|Conflicting lock", str(err)):
        return WarehouseLockedError(
            f"the warehouse {path} is in use by {_holder(str(err))}; DuckDB allows one writer "
            "and no reader beside it: wait for that run to finish, or use another CURATE_WAREHOUSE")
    return storage_error(path, err, read_only) or _unreadable(path, err)


class Connection:
    def __init__(self, path: Path | str, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        memory_limit = self.memory_limit = _memory_limit()  # refused before the file is opened
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                named = storage_error(self.path, err)
                if named is None:
                    raise
                raise named from None
        elif not self.path.exists():
            raise NotFoundError(f"no warehouse at {self.path}: run `curate ingest` first")
        try:
            con = duckdb.connect(str(self.path), read_only=read_only)
        except (duckdb.IOException, *_DAMAGE) as err:
            raise _open_error(self.path, err, read_only) from None
        except duckdb.Error as err:  # e.g. replaying the WAL onto a full disk
            named = storage_error(self.path, err, read_only)
            if named is None:
                raise
            raise named from None
        self.con = _NamedStorageErrors(con, self.path, read_only)
        try:
            self.con.execute(f"SET memory_limit = '{memory_limit}'")
            if read_only:
                self.schema_version()  # reads the catalog and a table: damage shows here, not mid-command
            else:
                self.migrate()
                self.after_open_for_writing()
        except (duckdb.IOException, *_DAMAGE) as err:
            self._close_after_error()
            raise _open_error(self.path, err, read_only) from None
        except BaseException:
            self._close_after_error()
            raise

    def after_open_for_writing(self) -> None:
        """What a writer does first (the warehouse marks runs whose process is gone)."""

    def close(self) -> None:
        try:
            self.con.close()
        except duckdb.Error as err:  # closing checkpoints the WAL into the file: the disk may be full by now
            named = storage_error(self.path, err, self.read_only)
            if named is None:
                raise
            raise named from err

    def _close_after_error(self) -> None:
        try:
            self.con.close()
        except duckdb.Error:
            pass  # the error being raised says what went wrong; this one would only hide it

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.close()
        else:
            self._close_after_error()

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
            try:
                self.con.execute("ROLLBACK")
            except (duckdb.Error, UserError):  # already rolled back (a failed write, a full disk): keep the cause
                pass
            raise
        self.con.execute("COMMIT")

    @contextmanager
    def _registered(self, view: str, data: pa.Table) -> Iterator[None]:
        """An Arrow table visible to SQL as `view` for the duration of the block."""
        self.con.complete()  # DuckDB refuses to register beside a result not read to its end (a fetchone())
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


class Part:
    """One bounded context's named queries (`runs.py`, `ingest.py`, `judging.py`, `versions.py`, `reviews.py`),
    held by the warehouse as an attribute (`wh.ingest`, `wh.judging`, ...) over its one connection: a function
    given a part says by its signature which tables it touches."""

    def __init__(self, db: Any):
        self._db = db  # the Warehouse: its connection, and its other parts where a query spans two

    @property
    def con(self) -> _NamedStorageErrors:
        return self._db.con

    @property
    def memory_limit(self) -> str:
        return self._db.memory_limit

    def transaction(self) -> AbstractContextManager[None]:
        return self._db.transaction()

    def _registered(self, view: str, data: pa.Table) -> AbstractContextManager[None]:
        return self._db._registered(view, data)

    def _insert(self, table: str, data: pa.Table, tail: str = "") -> None:
        self._db._insert(table, data, tail)

    def _matching(self, sql: str, keys: pa.Table, params: list[Any] | None = None) -> list[tuple]:
        return self._db._matching(sql, keys, params)
