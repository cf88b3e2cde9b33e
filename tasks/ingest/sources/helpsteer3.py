"""nvidia/HelpSteer3, config `preference` (DESIGN.md §2)."""

from __future__ import annotations

from typing import Any

import pandera.pandas as pa

from common.reasons import SchemaCheck
from schemas import checks as c
from schemas.pair import CandidatePair
from schemas.raw import element_check, text_column
from tasks.ingest.normalize import row_hash
from tasks.ingest.sources.base import AdapterContext, Source, one_per_row

RAW_SCHEMA = pa.DataFrameSchema(
    {
        "domain": text_column(nullable=True),
        "language": text_column(nullable=True),
        "context": pa.Column(None, element_check(c.is_message_list, SchemaCheck.IS_MESSAGE_LIST)),
        "response1": text_column(),
        "response2": text_column(),
        "overall_preference": pa.Column(
            None,
            [
                element_check(c.is_int_like, SchemaCheck.IS_INT),
                element_check(lambda v: not c.is_int_like(v) or -3 <= v <= 3, SchemaCheck.IN_RANGE.of(-3, 3)),
            ],
        ),
    },
    strict=False,
)


def source_id(row: dict[str, Any]) -> str:
    # The dataset has no id column: a content hash of the whole row is stable across revisions and splits.
    return "row-" + row_hash(row)[:24]


def to_pair(row: dict[str, Any], ctx: AdapterContext) -> CandidatePair:
    preference = int(row["overall_preference"])
    # For the code domain HelpSteer3's `language` is the programming language; its prompts are English.
    code = row.get("domain") == "code"
    return CandidatePair(
        source="helpsteer3",
        source_id=source_id(row),
        history=[{"role": m["role"], "content": m["content"]} for m in row["context"]],
        response_a=row["response1"],
        response_b=row["response2"],
        # HelpSteer3: negative means response1 better; our scale is from response A's side.
        human_label=float(-preference),
        raw_label=str(preference),
        domain=row.get("domain"),
        language="en" if code else row.get("language"),
        metadata={"split": ctx.split, "individual_preference": row.get("individual_preference"),
                  **({"programming_language": row.get("language")} if code else {})},
    )


SOURCE = Source(
    name="helpsteer3",
    hub_id="nvidia/HelpSteer3",
    config="preference",
    splits=("train", "validation"),
    license="cc-by-4.0",
    raw_schema=RAW_SCHEMA,
    kind="pairs",
    adapt=one_per_row(to_pair),
    source_id=source_id,
    description="HelpSteer3 preference: multi-domain, multi-turn, 3 annotators, -3..3 preference",
    # on its scale 1 is "slightly better": a clear preference says at least "better" (2)
    clear_label=2.0,
)
