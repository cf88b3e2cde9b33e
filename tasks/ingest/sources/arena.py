"""lmarena-ai/arena-human-preference-140k (docs/sources.md#arena-140k-rows).

Content parts are flattened to text; a message with an image or any other non-text part is rejected
(`non_text_content:<type>`). The history comes from `full_conversation`, which also holds the turns of
earlier votes in the same session, so the multi-turn rule sees everything the models saw.
"""

from __future__ import annotations

from typing import Any

from common.reasons import AdapterRejection, SchemaCheck, ValueFault, column_reason
from schemas import checks as c
from schemas.pair import CandidatePair, Rejection, model_names
from tasks.ingest.sources.arena_common import arena_pair, arena_raw_schema, winner_label_meaning
from tasks.ingest.sources.base import AdapterContext, Source, one_per_row
from tasks.ingest.synth_rows import BAD_KINDS_COMMON, SynthRows

# message contents are lists of typed parts
WINNERS = ("model_a", "model_b", "tie", "both_bad")
RAW_SCHEMA = arena_raw_schema("id", WINNERS, c.is_part_message_list)


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


def _part(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "image": None, "mimeType": None}]


class ArenaRows(SynthRows):
    """Synthetic arena-140k rows (`curate synth arena`): the history in `full_conversation` and in both sides."""

    BAD_KINDS = {
        **BAD_KINDS_COMMON,
        "answer_missing": AdapterRejection.MESSAGE_MISSING,
        "image_part": AdapterRejection.NON_TEXT_CONTENT.of("image"),
        "bad_winner": column_reason("winner", SchemaCheck.IN.of("model_a|model_b|tie|both_bad")),
        "missing_id": column_reason("id", SchemaCheck.MISSING),
        "divergent_multi_turn": AdapterRejection.MULTI_TURN_DIVERGENT_HISTORY,
        "conversation_not_list": column_reason("conversation_a", SchemaCheck.IS_MESSAGE_LIST),
        "surrogate_in_id": ValueFault.INVALID_UTF8.of("id"),
        "surrogate_in_model": ValueFault.INVALID_UTF8.of("model_a"),
        "bad_row_with_surrogate_id": ValueFault.INVALID_UTF8.of("id"),
        "language_not_text": column_reason("language", SchemaCheck.IS_TEXT),
    }
    ROW_VALUES = {
        "bad_winner": ("winner", "model_c"),
        "conversation_not_list": ("conversation_a", "hello"),
        "surrogate_in_model": ("model_a", "model-\udc00"),
        "language_not_text": ("language", 5),
    }

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        a, b, label = self.sides(g, swap)
        winner = "model_a" if label > 0 else "model_b" if label < 0 else self.rng.choice(["tie", "both_bad"])
        full, conv_a, conv_b = [], [], []
        hist = g["history"]
        for i in range(0, len(hist), 2):
            user = {"role": "user", "content": _part(hist[i]["content"])}
            last = i + 1 >= len(hist)
            ans_a = a if last else hist[i + 1]["content"]
            ans_b = b if last else hist[i + 1]["content"]
            msg_a = {"role": "assistant", "content": _part(ans_a)}
            msg_b = {"role": "assistant", "content": _part(ans_b), "num_tokens": len(ans_b) // 4}
            full.append({"user": user, "model_side_a": msg_a, "model_side_b": msg_b})
            conv_a += [user, msg_a]
            conv_b += [dict(user, num_tokens=len(hist[i]["content"]) // 4), msg_b]
        ma, mb = self.rng.sample(self.models, 2)
        return {
            "id": self.uid(),
            "model_a": ma,
            "model_b": mb,
            "winner": winner,
            "evaluation_session_id": self.uid(),
            "evaluation_order": 1,
            "conversation_a": conv_a,
            "conversation_b": conv_b,
            "full_conversation": full,
            "conv_metadata": {"turns": len(full)},
            "category_tag": {"math_v0.1": {"math": False}},
            "language": "en",
            "is_code": False,
            "timestamp": "2025-06-01T12:00:00.000000",
        }

    def damage(self, row: dict[str, Any], kind: str) -> None:
        if kind == "image_part":
            image = {"type": "image", "text": None, "image": "img.png", "mimeType": "image/png"}
            row["conversation_a"][0]["content"].append(dict(image))
            row["full_conversation"][0]["user"]["content"].append(dict(image))
        elif kind == "bad_role":  # a user turn with a role no judge template knows
            row["full_conversation"][0]["user"]["role"] = "tool"
            row["conversation_a"][0]["role"] = "tool"
            row["conversation_b"][0]["role"] = "tool"
        elif kind == "answer_missing":
            row["full_conversation"][-1]["model_side_b"] = None
        elif kind == "missing_id":
            del row["id"]
        elif kind == "surrogate_in_id":
            row["id"] = "id-\ud800-" + self.uid()
        elif kind == "bad_row_with_surrogate_id":
            row["id"] = "id-\udbff-" + self.uid()
            row["winner"] = "model_c"
        elif kind == "divergent_multi_turn":
            extra = {"role": "user", "content": _part(self.tm.text(200))}
            row["full_conversation"].append(
                {
                    "user": extra,
                    "model_side_a": {"role": "assistant", "content": _part(self.tm.text(300))},
                    "model_side_b": {"role": "assistant", "content": _part(self.tm.text(300))},
                }
            )
            row["conversation_a"] += [extra, row["full_conversation"][-1]["model_side_a"]]
            row["conversation_b"] += [extra, row["full_conversation"][-1]["model_side_b"]]
        else:
            super().damage(row, kind)


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
    label_meaning=winner_label_meaning(WINNERS),
    synth=ArenaRows,
)
