"""lmarena-ai/arena-human-preference-140k (DESIGN.md §2).

Content parts are flattened to text; a message with an image or any other non-text part is rejected
(`non_text_content:<type>`). The history comes from `full_conversation`, which also holds the turns of
earlier votes in the same session, so the multi-turn rule sees everything the models saw.
"""

from __future__ import annotations

from typing import Any

from common.reasons import AdapterRejection
from schemas import checks as c
from schemas.pair import CandidatePair, Rejection, model_names
from tasks.ingest.sources.arena_common import arena_pair, arena_raw_schema
from tasks.ingest.sources.base import AdapterContext, Source, one_per_row

# message contents are lists of typed parts
RAW_SCHEMA = arena_raw_schema("id", ("model_a", "model_b", "tie", "both_bad"), c.is_part_message_list)


def flatten_message(message: dict[str, Any] | None) -> dict[str, str] | str:
    """{role, content: [parts]} -> {role, content: text}, or the rejection reason."""
    if not isinstance(message, dict):
        return AdapterRejection.MESSAGE_MISSING
    parts = message.get("content") or []
    texts = []
    for part in parts:
        kind = part.get("type") or "unknown"
        if kind != "text" or part.get("image") is not None:
            return AdapterRejection.NON_TEXT_CONTENT.of("image" if part.get("image") is not None else kind)
        texts.append(part.get("text") or "")
    return {"role": str(message.get("role") or ""), "content": "\n\n".join(texts)}


def _flatten_all(messages: list[Any]) -> list[dict[str, str]] | str:
    out = []
    for m in messages:
        flat = flatten_message(m)
        if isinstance(flat, str):
            return flat
        out.append(flat)
    return out


def sides(row: dict[str, Any]) -> tuple[list[dict[str, str]], list[dict[str, str]]] | str:
    """Both sides' full message lists, earlier votes of the session included."""
    full = row.get("full_conversation")
    if isinstance(full, list) and full:
        side_a: list[Any] = []
        side_b: list[Any] = []
        for turn in full:
            if not isinstance(turn, dict):
                return AdapterRejection.FULL_CONVERSATION_MALFORMED
            side_a += [turn.get("user"), turn.get("model_side_a")]
            side_b += [turn.get("user"), turn.get("model_side_b")]
    else:
        side_a, side_b = row["conversation_a"], row["conversation_b"]
    flat_a, flat_b = _flatten_all(side_a), _flatten_all(side_b)
    if isinstance(flat_a, str):
        return flat_a
    if isinstance(flat_b, str):
        return flat_b
    return flat_a, flat_b


def domain_of(row: dict[str, Any]) -> str:
    tags = row.get("category_tag") or {}
    if row.get("is_code"):
        return "code"
    if ((tags.get("math_v0.1") or {}) if isinstance(tags, dict) else {}).get("math"):
        return "math"
    return "general"


def source_id(row: dict[str, Any]) -> str:
    return str(row["id"])


def to_pair(row: dict[str, Any], ctx: AdapterContext) -> CandidatePair | Rejection:
    both = sides(row)
    if isinstance(both, str):
        return Rejection([both])
    language = row.get("language")
    return arena_pair(
        "arena", source_id(row), both, row["winner"], ctx.settings.arena_multiturn,
        domain=domain_of(row),
        # `und` is also used on plainly Chinese rows: unknown is more honest than a wrong code.
        language=language,
        metadata={
            **model_names(row.get("model_a"), row.get("model_b")),
            "evaluation_session_id": row.get("evaluation_session_id"),
            "evaluation_order": row.get("evaluation_order"),
            "timestamp": row.get("timestamp"),
            "language_reported": language,
        },
    )


SOURCE = Source(
    name="arena",
    hub_id="lmarena-ai/arena-human-preference-140k",
    config=None,
    splits=("train",),
    license="cc-by-4.0 (prompts); model outputs under their providers' terms",
    raw_schema=RAW_SCHEMA,
    kind="pairs",
    adapt=one_per_row(to_pair),
    source_id=source_id,
    description="LMArena human votes between two anonymous models, 2025",
    names_models=True,
)
