"""nvidia/HelpSteer3, config `preference` (docs/sources.md#helpsteer3-rows)."""

from __future__ import annotations

from typing import Any

import pandera.pandas as pa

from common.reasons import SchemaCheck, ValueFault, column_reason
from schemas import checks as c
from schemas.pair import CandidatePair
from schemas.raw import element_check, text_column
from tasks.ingest.normalize import row_hash
from tasks.ingest.sources.base import AdapterContext, Source, one_per_row
from tasks.ingest.synth_rows import BAD_KINDS_COMMON, SynthRows

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


class HelpSteer3Rows(SynthRows):
    """Synthetic HelpSteer3 rows (`curate synth helpsteer3`)."""

    BAD_KINDS = {
        **BAD_KINDS_COMMON,
        "history_ends_with_assistant": column_reason("history", SchemaCheck.ENDS_WITH_USER_TURN),
        "system_not_first": column_reason("history", SchemaCheck.ROLES_ALLOWED),
        "history_empty": column_reason("history", SchemaCheck.NOT_EMPTY),
        "label_out_of_range": column_reason("overall_preference", SchemaCheck.IN_RANGE.of(-3, 3)),
        "label_not_int": column_reason("overall_preference", SchemaCheck.IS_INT),
        "missing_response": column_reason("response2", SchemaCheck.MISSING),
        "context_not_list": column_reason("context", SchemaCheck.IS_MESSAGE_LIST),
        "surrogate_in_domain": ValueFault.INVALID_UTF8.of("domain"),
        "nan_domain": ValueFault.NOT_FINITE.of("domain"),
        "surrogate_in_metadata": ValueFault.INVALID_UTF8.of("individual_preference"),
    }
    ROW_VALUES = {
        "label_out_of_range": ("overall_preference", 5),
        "label_not_int": ("overall_preference", "much better"),
        "context_not_list": ("context", "just a string"),
        "surrogate_in_domain": ("domain", "stem\udfff"),
        "nan_domain": ("domain", float("nan")),
        "surrogate_in_metadata": ("individual_preference", [{"score": 1, "reasoning": "fine \ud83d"}]),
    }

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        a, b, label = self.sides(g, swap)
        return {
            "domain": self.rng.choice(["general", "stem", "code", "multilingual"]),
            "language": "english",
            "context": [dict(m) for m in g["history"]],
            "response1": a,
            "response2": b,
            "overall_preference": -label,
            "individual_preference": [{"score": -label, "reasoning": "@Response 1 vs @Response 2."}],
        }

    def spoil(self, g: dict[str, Any], kind: str) -> None:
        if kind == "history_ends_with_assistant":
            g["history"].append({"role": "assistant", "content": "a trailing answer"})
        elif kind == "bad_role":
            g["history"].insert(0, {"role": "tool", "content": "tool output"})
        elif kind == "system_not_first":
            g["history"] = [{"role": "user", "content": "hello"}, {"role": "system", "content": "be brief"},
                            *g["history"]]
        elif kind == "history_empty":
            g["history"] = []
        else:
            super().spoil(g, kind)

    def damage(self, row: dict[str, Any], kind: str) -> None:
        if kind == "missing_response":
            del row["response2"]
        else:
            super().damage(row, kind)


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
    label_meaning={"scale": "-3..3 from response A's side", "direction": "positive: response A preferred",
                   "raw": "overall_preference: -3 response 1 (A) much better, -2 better, -1 slightly better, 0 about "
                          "the same, 1..3 response 2 (B) slightly better / better / much better",
                   "mapping": "-overall_preference", "tie": 0, "both_bad": "none",
                   "clear": "|label| >= 2 (at least \"better\")", "labelled_by": "people (3 annotators)"},
    synth=HelpSteer3Rows,
)
