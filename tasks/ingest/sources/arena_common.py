"""What every arena-style source shares: winner labels and the multi-turn rule.

The multi-turn rule: a vote becomes a pair only when both sides agree on every message before their
final answers (the judge must see the history both models saw). Under `strict` (the default) any other
vote is quarantined as `multi_turn_divergent_history`; under `last_turn` its final user turn alone is
kept as the history and the pair is flagged `context_dropped`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandera.pandas as pa

from common.reasons import AdapterRejection, SchemaCheck
from common.settings import MultiTurnPolicy
from schemas.pair import CandidatePair, Rejection
from schemas.raw import element_check, text_column
from tasks.ingest.normalize import last_turn_only, split_shared_history

# winner -> (human label from response A's side, both_bad)
WINNER_LABELS = {
    "model_a": (1.0, False),
    "model_b": (-1.0, False),
    "tie": (0.0, False),
    "both_bad": (0.0, True),
    "tie (bothbad)": (0.0, True),
}


def winner_label_meaning(winners: tuple[str, ...]) -> dict[str, object]:
    """What an arena-style source's labels mean (stored with its pairs: `Source.label_meaning`), for its winners."""
    said = {1.0: "+1", -1.0: "-1", 0.0: "0"}
    return {"scale": "-1..1 from response A's side (a vote: no strength)", "direction": "positive: response A preferred",
            "raw": "winner", "mapping": ", ".join(
                f"{w} {said[WINNER_LABELS[w][0]]}" + (" flagged both_bad" if WINNER_LABELS[w][1] else "") for w in winners),
            "tie": 0, "both_bad": "0 flagged both_bad", "clear": "|label| >= 1", "labelled_by": "people (votes)"}


def arena_raw_schema(id_column: str, winners: tuple[str, ...],
                     is_conversation: Callable[[Any], bool]) -> pa.DataFrameSchema:
    """An arena-style vote's raw row: an id, two model names, a winner among `winners`, two conversations."""
    return pa.DataFrameSchema(
        {
            id_column: text_column(),
            "model_a": text_column(nullable=True),
            "model_b": text_column(nullable=True),
            "winner": pa.Column(None, element_check(lambda v: v in winners, SchemaCheck.IN.of("|".join(winners)))),
            "conversation_a": pa.Column(None, element_check(is_conversation, SchemaCheck.IS_MESSAGE_LIST)),
            "conversation_b": pa.Column(None, element_check(is_conversation, SchemaCheck.IS_MESSAGE_LIST)),
        },
        strict=False,
    )


def pair_turns(
    side_a: list[dict[str, str]], side_b: list[dict[str, str]], policy: MultiTurnPolicy
) -> tuple[list[dict[str, str]], str, str, dict] | Rejection:
    """(history, answer A, answer B, metadata) under the multi-turn policy, or a rejection."""
    shared = split_shared_history(side_a, side_b)
    if not isinstance(shared, str):
        return (*shared, {})
    if shared == AdapterRejection.MULTI_TURN_DIVERGENT_HISTORY and policy == MultiTurnPolicy.last_turn:
        last = last_turn_only(side_a, side_b)
        if not isinstance(last, str):
            dropped = len(side_a) - 2
            return (*last, {"context_dropped": True, "dropped_messages": dropped})
        shared = last
    return Rejection([shared], f"{len(side_a)} and {len(side_b)} messages")


def arena_pair(
    source: str,
    source_id: str,
    sides: tuple[list[dict[str, str]], list[dict[str, str]]],
    winner: str,
    policy: MultiTurnPolicy,
    *,
    domain: str | None,
    language: str | None,
    metadata: dict[str, Any],
) -> CandidatePair | Rejection:
    """The canonical pair of an arena-style vote, or why there is none."""
    turns = pair_turns(sides[0], sides[1], policy)
    if isinstance(turns, Rejection):
        return turns
    history, answer_a, answer_b, extra = turns
    label, both_bad = WINNER_LABELS[winner]
    return CandidatePair(
        source=source, source_id=source_id, history=history, response_a=answer_a, response_b=answer_b,
        human_label=label, raw_label=winner, both_bad=both_bad, domain=domain, language=language,
        metadata={**metadata, **extra},
    )
