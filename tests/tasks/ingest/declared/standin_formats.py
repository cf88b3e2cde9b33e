"""Stand-in formats for the tests of the declaration, the registry and the CLI: small `Format`s in the contract's
shape (`tasks.ingest.declared.model.Format`), so that these tests exercise the declared-source machinery and not a
real format's mapping (the formats have tests of their own).

`PromptChosenRejected` reads prompt/chosen/rejected strings (TRL's explicit-prompt rows, text only): the chosen
answer is A, its label +1. The others declare their columns and label keys only, enough to parse a declaration
and to be told apart from the first; reading rows with them is not what they are for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pandera.pandas as pa
import pytest

from common.reasons import ReadFault, SchemaCheck, column_reason
from schemas.pair import CandidatePair
from schemas.raw import text_column
from tasks.ingest.declared.model import Declaration, Format
from tasks.ingest.normalize import row_hash
from tasks.ingest.sources.base import AdapterContext, one_per_row
from tasks.ingest.synth_rows import SynthRows


class PromptChosenRejected(Format):
    name = "trl"
    required_columns = ("prompt", "chosen", "rejected")
    optional_columns = ("id",)

    def check(self, decl: Declaration) -> list[str]:
        return []

    def detect(self, columns: set[str]) -> bool:
        return {"prompt", "chosen", "rejected"} <= columns

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        return pa.DataFrameSchema({decl.column(c): text_column() for c in self.required_columns}, strict=False)

    def source_id(self, decl: Declaration):
        def source_id(row: dict[str, Any]) -> str:
            given = row.get(decl.column("id"))
            return str(given) if given is not None else "row-" + row_hash(row)[:24]

        return source_id

    def adapter(self, decl: Declaration):
        source_id = self.source_id(decl)

        def to_pair(row: dict[str, Any], ctx: AdapterContext) -> CandidatePair:
            return CandidatePair(source=decl.name, source_id=source_id(row),
                                 history=[{"role": "user", "content": row[decl.column("prompt")]}],
                                 response_a=row[decl.column("chosen")], response_b=row[decl.column("rejected")],
                                 human_label=1.0, raw_label="chosen", domain=decl.domain, language=decl.language,
                                 metadata={"split": ctx.split})

        return one_per_row(to_pair)

    def clear_label(self, decl: Declaration) -> float:
        return 1.0

    def label_meaning(self, decl: Declaration) -> dict[str, Any]:
        return {"chosen": "A"}

    def synth(self, decl: Declaration) -> type[SynthRows]:
        prompt, chosen, rejected = (decl.column(c) for c in self.required_columns)

        class Rows(SynthRows):
            BAD_KINDS: ClassVar[dict[str, str]] = {
                "malformed_json": ReadFault.MALFORMED_JSON,
                "not_an_object": ReadFault.NOT_AN_OBJECT,
                "empty_response": column_reason("response_a", SchemaCheck.NOT_EMPTY),
                "identical_responses": SchemaCheck.RESPONSES_DIFFER,
            }

            def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
                # the chosen answer is the better one by the neutral row's label, whichever side it was drawn on
                a, b, label = self.sides(g, swap)
                better, worse = (a, b) if label >= 0 else (b, a)
                return {prompt: g["history"][-1]["content"], chosen: better, rejected: worse}

        return Rows


class _Declared(Format):
    """A format that declares its names only."""

    def check(self, decl: Declaration) -> list[str]:
        return [f"label.{k}: must be a string" for k, v in decl.label.items() if k in self.string_labels
                and not isinstance(v, str)]

    string_labels: ClassVar[frozenset[str]] = frozenset()

    def detect(self, columns: set[str]) -> bool:
        return set(self.required_columns) <= columns

    def synth(self, decl: Declaration) -> type[SynthRows] | None:
        return None

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        return pa.DataFrameSchema({decl.column(c): pa.Column(None) for c in self.required_columns}, strict=False)

    def adapter(self, decl: Declaration):
        return one_per_row(lambda row, ctx: None)

    def source_id(self, decl: Declaration):
        return lambda row: "row-" + row_hash(row)[:24]

    def clear_label(self, decl: Declaration) -> float:
        return 1.0


class Pairwise(_Declared):
    name = "pairwise"
    required_columns = ("prompt", "response_a", "response_b", "preference")
    optional_columns = ("id",)
    label_keys = frozenset({"a", "b", "tie", "both_bad"})
    string_labels = frozenset({"a", "b"})


class Rated(_Declared):
    name = "rated"
    required_columns = ("prompt", "responses", "response", "score")
    optional_columns = ("id",)
    label_keys = frozenset({"scale", "min_gap"})


class Implicit(_Declared):
    name = "trl-implicit"
    required_columns = ("chosen", "rejected")

    def detect(self, columns: set[str]) -> bool:
        return {"chosen", "rejected"} <= columns and "prompt" not in columns


STANDIN_FORMATS: dict[str, Format] = {f.name: f for f in (PromptChosenRejected(), Pairwise(), Rated(), Implicit())}


def detect_standin(columns: set[str]) -> Format | None:
    """The one stand-in format whose columns these are, or None."""
    found = [f for f in STANDIN_FORMATS.values() if f.detect(columns)]
    return found[0] if len(found) == 1 else None


def use_standin_formats(monkeypatch: pytest.MonkeyPatch, formats: Mapping[str, Format] = STANDIN_FORMATS) -> None:
    """The registry reads `formats` instead of `tasks.ingest.declared.formats`."""
    from tasks.ingest.declared import registry

    monkeypatch.setattr(registry, "formats", lambda: (formats, detect_standin))


@pytest.fixture
def standin_formats(monkeypatch):
    use_standin_formats(monkeypatch)
    return STANDIN_FORMATS
