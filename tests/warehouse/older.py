"""A warehouse as an older release left it: the migrations before a given one, recorded as applied."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb

from warehouse.store import migrations


def warehouse_before(path: Path, version: int) -> duckdb.DuckDBPyConnection:
    """A connection to a new warehouse file at `path` migrated up to (not including) `version`; the caller fills
    it and closes it, then opens it with `Warehouse` to migrate the rest."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                "applied_at TIMESTAMP NOT NULL)")
    for number, name, sql in migrations():
        if number < version:
            con.execute(sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [number, name, datetime(2026, 1, 1)])
    return con
