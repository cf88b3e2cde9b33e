"""lmsys/chatbot_arena_conversations: an arena-style source in one small adapter."""

from __future__ import annotations

from typing import Any

from schemas import checks as c
from schemas.pair import CandidatePair, Rejection, model_names
from tasks.ingest.sources.arena_common import arena_pair, arena_raw_schema, winner_label_meaning
from tasks.ingest.sources.base import AdapterContext, Source, one_per_row

# message contents are plain strings
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
RAW_SCHEMA = arena_raw_schema("question_id", WINNERS, c.is_message_list)


def source_id(row: dict[str, Any]) -> str:
    return str(row["question_id"])


def to_pair(row: dict[str, Any], ctx: AdapterContext) -> CandidatePair | Rejection:
    side_a = [{"role": m["role"], "content": m["content"]} for m in row["conversation_a"]]
    side_b = [{"role": m["role"], "content": m["content"]} for m in row["conversation_b"]]
    return arena_pair(
        "chatbot-arena", source_id(row), (side_a, side_b), row["winner"], ctx.settings.arena_multiturn,
        domain="general",
        language=row.get("language"),
        metadata={**model_names(row.get("model_a"), row.get("model_b")), "turn": row.get("turn")},
    )


SOURCE = Source(
    name="chatbot-arena",
    hub_id="lmsys/chatbot_arena_conversations",
    config=None,
    splits=("train",),
    license="see the dataset card (gated; user prompts CC-BY-4.0)",
    raw_schema=RAW_SCHEMA,
    kind="pairs",
    adapt=one_per_row(to_pair),
    source_id=source_id,
    description="Chatbot Arena conversations with pairwise human preferences, 2023",
    names_models=True,
    label_meaning=winner_label_meaning(WINNERS),
)
