"""A checked declaration -> an ordinary `Source` (docs/sources.md#declared-sources): from here on the pipeline cannot
tell a declared source from a built-in one. A local `path` is read as `curate ingest --path FILE` reads a file,
a `hub_id` as a built-in Hub source is (pinned on first use, at the declared `revision` or main).

A source declared `format = "auto"` is a `Source` whose format is not known yet: the ingest tells it from the first
batch's columns (`settle_format`) before any row is adapted, and says which it chose."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandera.pandas as pa

from tasks.ingest.declared.declaration import check_with_format, is_release_folder
from tasks.ingest.declared.model import AUTO, Declaration, DeclarationError, Format
from tasks.ingest.sources.base import AdapterContext, Source
from tasks.ingest.validate import MissingColumnsError

DECLARATION = "declaration"  # Source.extra's key for a declared source's Declaration
FORMAT = "format"  # ... and for its Format (absent while it is `auto`)
DETECTED = "format_detected"  # ... and True when the format was told from the rows (declared `auto`)
_SHOWN_COLUMNS = 30

# columns (and sample rows) -> the name of the format they are; a DeclarationError when none fits
Detect = Callable[[set[str], Sequence[dict[str, Any]]], str]


def declared_source(decl: Declaration, fmt: Format | None) -> Source:
    """The source `decl` declares, read by `fmt` (None: `decl.format` is auto, the format told by `settle_format`
    once the first batch is read)."""
    common: dict[str, Any] = dict(
        name=decl.name, hub_id=decl.hub_id or str(decl.path), config=decl.config, splits=decl.splits,
        license=decl.license, kind="pairs", description=decl.description or f"declared in {decl.origin}",
        local_path=decl.path, revision=decl.revision, declaration=decl.as_json(),
        # a release read back never counts as people's labels, whatever an older declaration said
        human_labels=decl.human_labels and not (decl.path is not None and is_release_folder(decl.path)),
    )
    if fmt is None:
        return Source(raw_schema=pa.DataFrameSchema({}, strict=False), adapt=_not_settled(decl),
                      source_id=_not_settled(decl), extra={DECLARATION: decl}, **common)
    return Source(raw_schema=fmt.raw_schema(decl), adapt=fmt.adapter(decl), source_id=fmt.source_id(decl),
                  clear_label=fmt.clear_label(decl), synth=fmt.synth(decl), names_models=fmt.names_models(decl),
                  finite_checked_by_adapter=fmt.finite_checked(decl), label_meaning=fmt.label_meaning(decl),
                  extra={DECLARATION: decl, FORMAT: fmt}, **common)


def declaration_of(source: Source) -> Declaration | None:
    """A declared source's declaration; None for a built-in source."""
    return source.extra.get(DECLARATION)


def format_name(source: Source) -> str | None:
    """A declared source's format (`auto` until it is told), None for a built-in one."""
    decl = declaration_of(source)
    return None if decl is None else decl.format


def is_settled(source: Source) -> bool:
    """Whether the source's format is known: a built-in source's always is."""
    return format_name(source) != AUTO


def settle_format(source: Source, rows: Iterable[dict[str, Any]], formats: Mapping[str, Format],
                  detect: Detect) -> Source:
    """`source` with its format told from the columns of `rows` (the first batch's) when it is declared `auto`,
    checked against that format as a declared one is; the source itself otherwise. No format matching the columns
    is a `DeclarationError` naming them."""
    decl = declaration_of(source)
    if decl is None or decl.format != AUTO:
        return source
    rows = [r for r in rows if isinstance(r, dict)]
    # detection reads the formats' own names: the declaration's names for the file's columns count as those
    renamed = {column: name for name, column in decl.columns.items()}
    logical = [{renamed.get(k, k): v for k, v in row.items()} for row in rows]
    try:
        fmt = formats[detect(columns_of(logical), logical)]
    except DeclarationError as err:
        raise DeclarationError(f"{decl.origin}: [sources.{decl.name}] format: auto, and {err}") from None
    settled = dataclasses.replace(decl, format=fmt.name)
    check_with_format(settled, fmt)
    told = declared_source(settled, fmt)
    return dataclasses.replace(told, extra={**told.extra, DETECTED: True})


def check_declared_columns(source: Source, rows: list[dict[str, Any]], where: str) -> None:
    """A declared source's first batch carries every column its format needs under the declaration's names: else
    `DeclaredColumnsError` naming each missing one and the columns seen, before anything is written."""
    decl, fmt = declaration_of(source), source.extra.get(FORMAT)
    if decl is None or fmt is None or not rows:
        return
    seen = columns_of(rows)
    missing = fmt.missing_columns(decl, seen)
    if missing:
        raise DeclaredColumnsError(missing, where, decl, seen)


class DeclaredColumnsError(MissingColumnsError):
    """The first batch lacks a column the declaration names (or its format needs): the file is not what
    `sources.toml` says it is."""

    def __init__(self, missing: list[str], where: str, decl: Declaration, seen: set[str]):
        self.columns = list(missing)
        Exception.__init__(self, f"{where}: column(s) {', '.join(map(repr, missing))} of [sources.{decl.name}] "
                                 f"({decl.format}, {decl.origin}) in no row of the first batch; its columns: "
                                 f"{shown_columns(seen)}")


def columns_of(rows: Iterable[dict[str, Any]]) -> set[str]:
    """Every top-level column any of `rows` carries."""
    return {key for row in rows if isinstance(row, dict) for key in row}


def shown_columns(columns: set[str]) -> str:
    names = sorted(columns)
    more = len(names) - _SHOWN_COLUMNS
    return ", ".join(names[:_SHOWN_COLUMNS]) + (f" and {more} more" if more > 0 else "") if names else "none"


def _not_settled(decl: Declaration) -> Callable[..., Any]:
    def not_settled(row: dict[str, Any], ctx: AdapterContext | None = None) -> Any:
        raise RuntimeError(f"{decl.name}: format auto is told from the first batch (settle_format) before a row is "
                           "read")

    return not_settled
