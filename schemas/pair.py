"""The canonical candidate pair: what every source adapter produces (docs/data-model.md#the-canonical-pair)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from common.reasons import SchemaCheck
from common.settings import MAX_BYTES_PER_TOKEN

# Human labels on one scale from response A's side: sign is the direction, 0 a tie
# (docs/data-model.md#the-human-label-scale).
HUMAN_LABEL_MIN = -3.0
HUMAN_LABEL_MAX = 3.0

# The metadata keys naming the models that wrote response A and response B: every source that knows them puts
# them here (and says so, `Source.names_models`), and the bias audit's model-family win rates read them.
MODEL_A = "model_a"
MODEL_B = "model_b"


def model_names(model_a: Any, model_b: Any) -> dict[str, str | None]:
    """The metadata entries naming the two answers' models (a name that is not text is unknown)."""
    return {MODEL_A: model_a if isinstance(model_a, str) else None,
            MODEL_B: model_b if isinstance(model_b, str) else None}


@dataclass(slots=True)
class CandidatePair:
    source: str
    source_id: str
    history: list[dict[str, str]]  # [{"role", "content"}], ends with a user turn
    response_a: str
    response_b: str
    human_label: float | None = None
    raw_label: str | None = None
    both_bad: bool = False
    domain: str | None = None
    language: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Rejection:
    """An adapter's refusal of a raw row: reasons are stable names (they become quarantine reasons)."""

    reasons: list[str]
    detail: str = ""


MESSAGE_TYPE = pa.struct([("role", pa.string()), ("content", pa.string())])

_RUN = [("ingest_run_id", pa.string())]
_TS = pa.timestamp("us")

# The rows one ingest batch writes, as the warehouse's tables hold them (migrations 001, 019).
CANDIDATE_PAIR_SCHEMA = pa.schema([
    ("pair_id", pa.string()), ("source", pa.string()), ("source_id", pa.string()), ("source_revision", pa.string()),
    ("history", pa.list_(MESSAGE_TYPE)), ("response_a", pa.string()), ("response_b", pa.string()),
    ("human_label", pa.float64()), ("raw_label", pa.string()), ("both_bad", pa.bool_()), ("domain", pa.string()),
    ("language", pa.string()), ("metadata", pa.string()), ("est_tokens", pa.int32()), *_RUN, ("ingested_at", _TS),
    ("prompt_tokens", pa.int32()), ("response_a_tokens", pa.int32()), ("response_b_tokens", pa.int32()),  # 019
])
SIGHTING_SCHEMA = pa.schema([
    ("source", pa.string()), ("source_id", pa.string()), ("pair_id", pa.string()), ("source_revision", pa.string()),
    ("human_label", pa.float64()), ("raw_label", pa.string()), ("swapped", pa.bool_()), ("is_first", pa.bool_()),
    *_RUN, ("seen_at", _TS),
])
QUARANTINE_SCHEMA = pa.schema([
    ("source", pa.string()), ("row_hash", pa.string()), ("source_id", pa.string()), ("source_revision", pa.string()),
    ("stage", pa.string()), ("reasons", pa.list_(pa.string())), ("detail", pa.string()), ("position", pa.string()),
    ("raw_row", pa.string()), *_RUN, ("quarantined_at", _TS),
])
NEAR_DUPLICATE_SCHEMA = pa.schema([("pair_id", pa.string()), ("kept_pair_id", pa.string()),
                                   ("similarity", pa.float64()), *_RUN])
SIGNATURE_SCHEMA = pa.schema([("pair_id", pa.string()), ("num_perm", pa.int32()), ("signature", pa.binary())])
CONTAMINATION_SCHEMA = pa.schema([("pair_id", pa.string()), ("benchmark", pa.string()), ("benchmark_id", pa.string()),
                                  ("overlap", pa.float64()), ("detected_at", _TS)])
# The personal-data scan of a pair (migration 026): which pairs were scanned under which rules, and each finding
# as its kind, part and span (never the text).
PII_SCAN_SCHEMA = pa.schema([("pair_id", pa.string()), ("rules", pa.string()), ("scanned_at", _TS)])
PII_FINDING_SCHEMA = pa.schema([("pair_id", pa.string()), ("part", pa.string()), ("message", pa.int32()),
                                ("kind", pa.string()), ("span_start", pa.int32()), ("span_end", pa.int32())])




def pair_frame_schema(input_token_budget: int):
    """pandera schema for a DataFrame of normalized pairs (object columns, one row per pair).

    Check names are the quarantine reasons, so they are short and stable.
    """
    import pandera.pandas as pa

    from schemas import checks as c

    def ew(fn, name):
        return pa.Check(fn, element_wise=True, name=name)

    text_checks = [ew(c.is_str, SchemaCheck.IS_TEXT), ew(c.text_not_empty, SchemaCheck.NOT_EMPTY)]
    return pa.DataFrameSchema(
        {
            "source": pa.Column(None, ew(c.text_not_empty, SchemaCheck.NOT_EMPTY)),
            "source_id": pa.Column(None, ew(c.text_not_empty, SchemaCheck.NOT_EMPTY)),
            "history": pa.Column(
                None,
                [
                    ew(c.history_not_empty, SchemaCheck.NOT_EMPTY),
                    ew(c.history_ends_with_user, SchemaCheck.ENDS_WITH_USER_TURN),
                    ew(c.history_roles_allowed, SchemaCheck.ROLES_ALLOWED),
                    ew(c.history_last_turn_not_empty, SchemaCheck.LAST_USER_TURN_NOT_EMPTY),
                ],
            ),
            "response_a": pa.Column(None, text_checks),
            "response_b": pa.Column(None, text_checks),
            "human_label": pa.Column(
                None,
                pa.Check(
                    lambda s: s.isna() | s.between(HUMAN_LABEL_MIN, HUMAN_LABEL_MAX),
                    name=SchemaCheck.IN_RANGE.of(format(HUMAN_LABEL_MIN, "g"), format(HUMAN_LABEL_MAX, "g")),
                ),
                nullable=True,
            ),
            **{name: pa.Column(None, ew(c.is_str_or_none, SchemaCheck.IS_TEXT), nullable=True, required=False)
               for name in ("raw_label", "domain", "language")},
            # Computed before the frame is built: pandera loses the row of a string that cannot encode.
            "text": pa.Column(None, pa.Check(lambda s: s == True, name=SchemaCheck.VALID_UTF8),  # noqa: E712
                           required=False),
            # Never quarantined on an estimate: only a pair no tokenizer could fit (see MAX_BYTES_PER_TOKEN).
            "utf8_bytes": pa.Column(None, pa.Check(
                lambda s: s <= MAX_BYTES_PER_TOKEN * input_token_budget,
                name=SchemaCheck.FITS_JUDGE_CONTEXT.of(MAX_BYTES_PER_TOKEN * input_token_budget))),
        },
        checks=[pa.Check(lambda df: df["response_a"] != df["response_b"], name=SchemaCheck.RESPONSES_DIFFER)],
        strict=False,
    )
