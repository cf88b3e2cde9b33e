"""A declared source: a table of `sources.toml` that names a source without code (docs/sources.md#declared-sources).

This module holds the declaration as read (`Declaration`) and the contract every format meets (`Format`):
`tasks.ingest.declared.declaration` reads and checks the TOML, `tasks.ingest.declared.formats` holds one module
per format, and `tasks.ingest.declared.source` turns a checked declaration into an ordinary `Source`, so that
the rest of the pipeline cannot tell a declared source from a built-in one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from common.errors import InvalidInputError

if TYPE_CHECKING:
    import pandera.pandas as pa

    from tasks.ingest.sources.base import Adapter
    from tasks.ingest.synth_rows import SynthRows

FORMAT_NAMES = ("trl", "trl-implicit", "pairwise", "rated", "hh", "helpsteer3")
AUTO = "auto"
PROMPT_FORMATS = ("hh",)  # `prompt_format`: a text prompt read as a Human/Assistant transcript
_STORED_WHEN_GIVEN = frozenset({"prompt_format", "human_labels"})  # keys added since, stored when set


@dataclass(frozen=True)
class Declaration:
    """One `[sources.NAME]` table, checked for shape (types, known keys, where its rows live) but not yet for
    its format's columns and label rule (the format's `check` does that)."""

    name: str
    origin: Path  # the TOML file it was read from (a local `path` is relative to its folder)
    format: str  # one of FORMAT_NAMES, or AUTO before the first batch was read
    license: str
    description: str = ""
    # where the rows live: a local file, or a Hub repository
    path: Path | None = None  # absolute once read
    hub_id: str | None = None
    config: str | None = None
    splits: tuple[str, ...] = ("train",)
    revision: str | None = None
    # the format's logical column -> the file's column, where they differ (the format's own names otherwise)
    columns: Mapping[str, str] = field(default_factory=dict)
    # the label rule as written (its keys depend on the format); {} for formats whose label is implicit
    label: Mapping[str, Any] = field(default_factory=dict)
    # the columns naming the models that wrote each answer: {"a": col, "b": col} (pairwise) or {"response": col}
    # (rated, inside a response), empty when the source does not name them
    models: Mapping[str, str] = field(default_factory=dict)
    # constant facts of every row when the file does not carry them
    domain: str | None = None
    language: str | None = None
    # whether people gave the labels (only people's labels may certify a version: docs/certification.md)
    human_labels: bool = False
    # how a text prompt is read: None, one user turn; "hh", a `Human:` / `Assistant:` transcript parsed into turns
    prompt_format: str | None = None
    # false: the rows may not be redistributed whatever the license says (a public Hub repository refuses them)
    redistribute: bool = True

    def column(self, logical: str) -> str:
        """The file's name for the format's logical column `logical`."""
        return self.columns.get(logical, logical)

    def as_json(self) -> dict[str, Any]:
        """The declaration as plain JSON values, as it is stored with the source's facts in the warehouse."""
        def plain(v: Any) -> Any:
            if isinstance(v, Path):
                return str(v)
            if isinstance(v, Mapping):
                return {str(k): plain(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return [plain(x) for x in v]
            return v

        # a key added since (prompt_format, human_labels, redistribute) is stored only when set away from its
        # default: older declarations keep their stored form
        return {f.name: plain(getattr(self, f.name)) for f in fields(self)
                if not (f.name in _STORED_WHEN_GIVEN and getattr(self, f.name) in (None, False))
                and not (f.name == "redistribute" and self.redistribute)}


class DeclarationError(InvalidInputError):
    """A declaration that cannot be used: one line, naming the source and the key (a `UserError`: the CLI prints
    it as that line, exit 2)."""


class Format:
    """One format a declared source may have. A subclass sets the class attributes and writes the methods;
    `tasks.ingest.declared.formats.FORMATS` maps each name to an instance."""

    name: ClassVar[str]
    required_columns: ClassVar[tuple[str, ...]]  # logical names every row must carry
    optional_columns: ClassVar[tuple[str, ...]] = ()
    # logical names of keys inside a column's values (`rated`: each response's text and score), renamable too
    inner_columns: ClassVar[tuple[str, ...]] = ()
    label_keys: ClassVar[frozenset[str]] = frozenset()  # the keys its `label = {...}` may hold

    def check(self, decl: Declaration) -> list[str]:
        """Every mistake of `decl` for this format (an unknown label key, an impossible rule), each one line
        naming the key; [] when it can be used. Reads no rows."""
        raise NotImplementedError

    def detect(self, columns: set[str]) -> bool:
        """Whether rows with these top-level columns look like this format (the format's own column names)."""
        raise NotImplementedError

    def looks_like(self, row: dict[str, Any]) -> bool:
        """Whether a raw row's values (under the format's own column names) look like this format: what tells
        formats with the same columns apart (`hh` and `trl-implicit`) when a source is declared `auto`."""
        return True

    def missing_columns(self, decl: Declaration, columns: set[str]) -> list[str]:
        """The file's names of the required columns absent from `columns` (the first batch's)."""
        return [decl.column(c) for c in self.required_columns if decl.column(c) not in columns]

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        raise NotImplementedError

    def adapter(self, decl: Declaration) -> Adapter:
        """raw row -> its CandidatePairs and Rejections, as a built-in source's `adapt`."""
        raise NotImplementedError

    def source_id(self, decl: Declaration) -> Any:
        """raw row -> its stable id (an id column when the declaration names one, else a content hash)."""
        raise NotImplementedError

    def clear_label(self, decl: Declaration) -> float:
        """|human_label| from which this declaration's preference is clear (on the canonical -3..3 scale)."""
        raise NotImplementedError

    def label_meaning(self, decl: Declaration) -> dict[str, Any]:
        """What the labels mean, as stored with the pairs (scale, direction, clear-label rule, ties and both-bad
        values): a later run compares it and refuses a change for a source already ingested."""
        raise NotImplementedError

    def names_models(self, decl: Declaration) -> bool:
        """Whether its pairs name the models that wrote each answer (`Source.names_models`)."""
        return bool(decl.models)

    def finite_checked(self, decl: Declaration) -> tuple[str, ...]:
        """The file's columns whose NaN / Infinity the adapter judges part by part (`Source.finite_checked_by_adapter`:
        `rated`'s responses, where a NaN score loses that response, not the row)."""
        return ()

    def synth(self, decl: Declaration) -> type[SynthRows]:
        """The synthetic rows of this format under `decl`'s column names (`curate synth NAME`)."""
        raise NotImplementedError
