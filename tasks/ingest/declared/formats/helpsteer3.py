"""`helpsteer3`: rows in HelpSteer3's preference shape, `context` / `response1` / `response2` /
`overall_preference` (docs/sources.md#helpsteer3-helpsteer3-shaped-rows).

The shape of nvidia/HelpSteer3's `preference` config, and of the `helpsteer3` config every version this project
publishes: a declared source of this format reads either under its own name (a team's re-curation of its own
release, a fork of HelpSteer3). The built-in HelpSteer3 source's checks and mapping apply as they are
(`tasks.ingest.sources.helpsteer3`): the label is -3..3, negative when response 1 (A) is better, clear from 2.
The columns may be renamed; `domain` and `language` are read from the row when it has them, else the
declaration's.
"""

from __future__ import annotations

from typing import Any

import pandera.pandas as pa

from tasks.ingest.declared.formats.shared import ID, DeclaredFormat, DeclaredRows, id_columns, row_source_id
from tasks.ingest.declared.model import Declaration
from tasks.ingest.sources import helpsteer3 as hs3
from tasks.ingest.sources.base import Adapter, AdapterContext, one_per_row
from tasks.ingest.synth_rows import SynthRows

COLUMNS = ("context", "response1", "response2", "overall_preference")


class HelpSteer3Format(DeclaredFormat):
    name = "helpsteer3"
    required_columns = COLUMNS
    optional_columns = (ID, "domain", "language")
    clear = hs3.SOURCE.clear_label

    def _renames(self, decl: Declaration) -> dict[str, str]:
        """HelpSteer3's column -> the file's, where they differ."""
        return {c: decl.column(c) for c in (*COLUMNS, "domain", "language") if decl.column(c) != c}

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        schema = hs3.RAW_SCHEMA.rename_columns(self._renames(decl))
        return schema.add_columns(id_columns(decl)) if ID in decl.columns else schema

    def adapter(self, decl: Declaration) -> Adapter:
        back = {v: k for k, v in self._renames(decl).items()}  # the file's column -> HelpSteer3's
        source_id = row_source_id(decl)

        def to_pair(row: dict[str, Any], ctx: AdapterContext):
            as_hs3 = {back.get(k, k): v for k, v in row.items()} if back else row
            pair = hs3.to_pair(as_hs3, ctx)
            pair.source, pair.source_id = decl.name, source_id(row)
            pair.domain = pair.domain if pair.domain is not None else decl.domain
            pair.language = pair.language if pair.language is not None else decl.language
            return pair

        return one_per_row(to_pair)

    def label_meaning(self, decl: Declaration) -> dict[str, Any]:
        return {"format": self.name, "scale": [-3, 3], "direction": "negative: response1 (A) better",
                "human_label": "-overall_preference", "clear_label": self.clear}

    def synth(self, decl: Declaration) -> type[SynthRows]:
        renames = self._renames(decl)

        def renamed(reason: str) -> str:
            # a schema reason names its column first (`response2:missing`), a value fault last (`not_finite:domain`)
            parts = reason.split(":")
            if parts[0] in renames:
                parts[0] = renames[parts[0]]
            elif len(parts) > 1 and parts[-1] in renames:
                parts[-1] = renames[parts[-1]]
            return ":".join(parts)

        rows = hs3.HelpSteer3Rows
        return type("HelpSteer3Rows", (_Renamed, rows), {
            "DECL": decl, "RENAMES": renames, "__module__": __name__,
            "BAD_KINDS": {k: renamed(v) for k, v in rows.BAD_KINDS.items()},
            "ROW_VALUES": {k: (renames.get(f, f), v) for k, (f, v) in rows.ROW_VALUES.items()},
        })


class _Renamed(DeclaredRows):
    """HelpSteer3's synthetic rows under the declaration's column names (and a fresh id when it maps one)."""

    RENAMES: dict[str, str] = {}

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        row = super().render(g, swap)
        return self.with_id({self.RENAMES.get(k, k): v for k, v in row.items()})

    def damage(self, row: dict[str, Any], kind: str) -> None:
        if kind == "missing_response":
            del row[self.RENAMES.get("response2", "response2")]
        else:
            super().damage(row, kind)


FORMAT = HelpSteer3Format()
