"""lmsys/chatbot_arena_conversations: an arena-style source in one small adapter."""

from __future__ import annotations

from typing import Any

from schemas import raw
from schemas.pair import CandidatePair, Rejection
from tasks.ingest.sources.arena_common import arena_pair
from tasks.ingest.sources.base import AdapterContext, Source


def source_id(row: dict[str, Any]) -> str:
    return str(row["question_id"])


def to_pair(row: dict[str, Any], ctx: AdapterContext) -> CandidatePair | Rejection:
    side_a = [{"role": m["role"], "content": m["content"]} for m in row["conversation_a"]]
    side_b = [{"role": m["role"], "content": m["content"]} for m in row["conversation_b"]]
    return arena_pair(
        "chatbot-arena", source_id(row), (side_a, side_b), row["winner"], ctx.settings.arena_multiturn,
        domain="general",
        language=row.get("language"),
        metadata={"model_a": row.get("model_a"), "model_b": row.get("model_b"), "turn": row.get("turn")},
    )


SOURCE = Source(
    name="chatbot-arena",
    hub_id="lmsys/chatbot_arena_conversations",
    config=None,
    splits=("train",),
    license="see the dataset card (gated; user prompts CC-BY-4.0)",
    raw_schema=raw.CHATBOT_ARENA,
    kind="pairs",
    adapt=to_pair,
    source_id=source_id,
    description="Chatbot Arena conversations with pairwise human preferences, 2023",
)
