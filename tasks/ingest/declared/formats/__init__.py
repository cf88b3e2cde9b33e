"""The formats a declared source may have, one module each (docs/sources.md#formats), and how `format = "auto"`
picks one from the first batch's columns.

`detect_format` tries the formats in `DETECTION_ORDER`, the most specific columns first (`helpsteer3`, `rated`,
`pairwise` and `trl` name columns no other format needs; `trl-implicit` and `hh` share theirs), and returns the first whose columns
are all there and, when sample rows are given, whose values at least half of them look like (HH transcripts are
texts of `Human:` / `Assistant:` turns; anything else under `chosen` / `rejected` is TRL's implicit prompt).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tasks.ingest.declared.formats import helpsteer3, hh, pairwise, rated, trl, trl_implicit
from tasks.ingest.declared.model import DeclarationError, Format

FORMATS: dict[str, Format] = {f.name: f for f in (trl.FORMAT, trl_implicit.FORMAT, pairwise.FORMAT, rated.FORMAT,
                                                   hh.FORMAT, helpsteer3.FORMAT)}
DETECTION_ORDER: tuple[str, ...] = ("helpsteer3", "rated", "pairwise", "trl", "hh", "trl-implicit")


def detect_format(columns: set[str], rows: Sequence[dict[str, Any]] = ()) -> str:
    """The format of rows with these top-level columns (and, when given, these sample rows); refused with the
    columns seen and the formats known when none fits."""
    for name in DETECTION_ORDER:
        fmt = FORMATS[name]
        if not fmt.detect(columns):
            continue
        sample = [r for r in rows if isinstance(r, dict)]
        if sample and 2 * sum(fmt.looks_like(r) for r in sample) < len(sample):
            continue
        return name
    known = "; ".join(f"{n} ({', '.join(FORMATS[n].required_columns)})" for n in DETECTION_ORDER)
    raise DeclarationError(f"no format fits the columns {', '.join(sorted(columns)) or '(none)'}: the formats "
                           f"known are {known}; declare `format` and map the columns with `columns = {{...}}`")


__all__ = ["DETECTION_ORDER", "FORMATS", "detect_format"]
