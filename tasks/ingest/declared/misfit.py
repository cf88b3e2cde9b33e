"""A declared source whose rows are another format's (docs/sources.md#declared-sources): every row read was
quarantined, none made a pair, and what `format = "auto"` tells from the first batch's rows is another format than
the declared one. The ingest then ends with one line naming that format (exit 2), after every row was quarantined
and recorded as usual: nothing is lost, and an ingest under the right format reads the file again (the run is
recorded as failed, so the revision does not count as read).

UltraFeedback-binarized declared `trl` is the case in point: its `chosen` and `rejected` are whole conversations (a
user turn first), so each row is `chosen:assistant_turns_only`, and they are `trl-implicit`'s rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from common.errors import InvalidInputError
from tasks.ingest.declared.model import AUTO, DeclarationError
from tasks.ingest.declared.source import columns_of, declaration_of
from tasks.ingest.sources.base import Source

SAMPLE_ROWS = 200  # rows of the first batch kept to tell the format they fit
_SHOWN_REASONS = 3


class FormatMisfitError(InvalidInputError):
    """Every row of a declared source was quarantined, and its rows fit another format."""


def fitting_format(source: Source, rows: Sequence[Any]) -> str | None:
    """The format `format = "auto"` tells from `rows` (under the declaration's names for the file's columns, as
    auto reads them); None when none fits."""
    from tasks.ingest.declared.formats import detect_format

    decl = declaration_of(source)
    renamed = {column: name for name, column in decl.columns.items()} if decl is not None else {}
    logical = [{renamed.get(k, k): v for k, v in row.items()} for row in rows if isinstance(row, dict)]
    if not logical:
        return None
    try:
        return detect_format(columns_of(logical), logical)
    except DeclarationError:
        return None


def misfit(source: Source, read: int, rows_paired: int, quarantined_rows: int, reasons: Counter,
           sample: Sequence[Any], where: str) -> FormatMisfitError | None:
    """The error ending the ingest of a declared source none of whose `read` rows made a pair, all quarantined,
    when its first batch's rows (`sample`) fit another format than the declared one; None otherwise (a built-in
    source, a row that made a pair, rows that fit the declared format or none)."""
    decl = declaration_of(source)
    if decl is None or decl.format == AUTO or read == 0 or rows_paired > 0 or quarantined_rows < read:
        return None
    fits = fitting_format(source, sample)
    if fits is None or fits == decl.format:
        return None
    top = ", ".join(f"{reason} {n:,}" for reason, n in reasons.most_common(_SHOWN_REASONS))
    more = len(reasons) - _SHOWN_REASONS
    return FormatMisfitError(
        f"{where}: every row of [sources.{decl.name}] ({decl.format}, {decl.origin}) was quarantined, none made a "
        f"pair ({read:,} rows: {top}{f' and {more} more reasons' if more > 0 else ''}); its rows fit format "
        f"{fits!r} (as format = \"auto\" tells them): declare format = \"{fits}\" (or \"auto\") and ingest again; "
        "the quarantined rows are recorded")
