"""Lazy pandera validation that turns failure cases into per-row quarantine reasons."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaErrors

from common.errors import UserError
from common.reasons import SchemaCheck, column_reason

# pandera's built-in check names, renamed to say what a person would say.
_CHECK_NAMES = {"not_nullable": SchemaCheck.MISSING}


class MissingColumnsError(UserError, ValueError):
    """A whole batch lacks required columns: the file is not of the source it was read as."""

    def __init__(self, columns: Sequence[str], where: str):
        self.columns = list(columns)
        super().__init__(f"{where}: required column(s) missing from every row: {', '.join(self.columns)}")


def frame_of(rows: Sequence[dict], columns: Sequence[str]) -> pd.DataFrame:
    """Object-typed frame of the named columns: absent keys become None, values keep their Python type."""
    data = {col: pd.Series([r.get(col) if isinstance(r, dict) else None for r in rows], dtype=object) for col in columns}
    return pd.DataFrame(data, index=pd.RangeIndex(len(rows)))


def row_failures(df: pd.DataFrame, schema: pa.DataFrameSchema) -> dict[int, list[str]]:
    """Validate lazily; return {row position: [reason, ...]} for failing rows (empty when all pass)."""
    try:
        schema.validate(df, lazy=True)
        return {}
    except SchemaErrors as err:
        cases = err.failure_cases
    frame_checks = {chk.name for chk in schema.checks}
    failures: dict[int, list[str]] = defaultdict(list)
    for column, check, index in zip(cases["column"], cases["check"], cases["index"]):
        check = _CHECK_NAMES.get(str(check), str(check))
        # A frame-level check reports every column of a failing row: its name alone is the reason.
        reason = check if check in frame_checks or not isinstance(column, str) else column_reason(column, check)
        if index is None or (isinstance(index, float) and pd.isna(index)):
            # A frame-level failure (a missing column) is reported by `missing_columns`, not per row.
            continue
        row = int(index)
        if reason not in failures[row]:
            failures[row].append(reason)
    return dict(failures)


def missing_columns(rows: Sequence[dict], schema: pa.DataFrameSchema) -> list[str]:
    """Required columns that no row of the batch carries at all."""
    present: set[str] = set()
    for r in rows:
        if isinstance(r, dict):
            present.update(r.keys())
    return [name for name, col in schema.columns.items() if col.required and name not in present]
