"""`trl-implicit`: TRL's preference rows with an implicit prompt, `chosen` / `rejected` only
(docs/sources.md#trl-implicit-implicit-prompt).

The prompt is what the two share from their start, as TRL's `extract_prompt` defines it: the index of the first
element where chosen and rejected differ (a message of a conversation, a character of a text); when one is the
start of the other, every element but the last of the shorter one. Of a text, a space just before that index goes
to the answers, not the prompt. Here a conversation's shared messages are the history (its messages compared by
role and content), and what follows must be one assistant turn on each side; a text's shared start is one user
turn, and the rest of each text is its answer. Sharing nothing is `no_common_prompt`.

As TRL's, the rule for texts is character by character: two answers that start alike ("The sky is blue." and "The
sky is green.") leave their common start ("The sky is ") in the prompt. A source of texts that hold their turns'
markers is better declared as `hh` (Anthropic's `\\n\\nHuman:` transcripts) or `trl` with its prompt.
"""

from __future__ import annotations

from typing import Any

import pandera.pandas as pa

from common.reasons import AdapterRejection, SchemaCheck, column_reason
from schemas.pair import Rejection
from tasks.ingest.declared.formats.hh import TRANSCRIPT  # an HH transcript: `auto` leaves it to `hh`
from tasks.ingest.declared.formats.shared import (
    ID,
    ChosenFormat,
    DeclaredRows,
    common_bad_kinds,
    conversation_column,
    id_bad_kinds,
    id_columns,
    messages,
    rows_class,
    split_adapter,
    spoil_both,
)
from tasks.ingest.declared.model import Declaration
from tasks.ingest.sources.base import Adapter
from tasks.ingest.synth_rows import SynthRows


def shared_prefix_length(chosen: str | list[Any], rejected: str | list[Any]) -> int:
    """How many leading elements are the implicit prompt (TRL's `extract_prompt` rule; see the module)."""
    shorter = min(len(chosen), len(rejected))
    first_difference = next((i for i in range(shorter) if _key(chosen[i]) != _key(rejected[i])), None)
    if first_difference is None:  # one is the start of the other: each keeps its last element
        return max(shorter - 1, 0)
    if first_difference > 0 and chosen[first_difference - 1] == " ":
        return first_difference - 1
    return first_difference


def _key(element: Any) -> Any:
    return (element.get("role"), element.get("content")) if isinstance(element, dict) else element


def split_implicit(chosen: str | list[dict[str, Any]], rejected: str | list[dict[str, Any]]
                   ) -> tuple[list[dict[str, str]], str, str] | Rejection:
    """(history, chosen answer, rejected answer) of an implicit-prompt pair, or why there is none."""
    if isinstance(chosen, str) != isinstance(rejected, str):
        return Rejection([AdapterRejection.NO_COMMON_PROMPT], "one side is a text, the other a message list")
    k = shared_prefix_length(chosen, rejected)
    if k == 0:
        return Rejection([AdapterRejection.NO_COMMON_PROMPT], "the first " + ("characters" if isinstance(chosen, str)
                                                                              else "messages") + " differ")
    if isinstance(chosen, str) and isinstance(rejected, str):
        return [{"role": "user", "content": chosen[:k]}], chosen[k:], rejected[k:]
    assert isinstance(chosen, list) and isinstance(rejected, list)
    rest = {"chosen": chosen[k:], "rejected": rejected[k:]}
    wrong = [side for side, turns in rest.items() if len(turns) != 1 or turns[0].get("role") != "assistant"]
    if wrong:
        return Rejection([AdapterRejection.RESPONSE_NOT_ONE_ASSISTANT_TURN],
                         "; ".join(f"{side}: {len(rest[side])} message(s) after the {k} shared" for side in wrong))
    return messages(chosen[:k]), rest["chosen"][0]["content"], rest["rejected"][0]["content"]


class TrlImplicitFormat(ChosenFormat):
    name = "trl-implicit"
    required_columns = ("chosen", "rejected")
    optional_columns = (ID,)

    # a `prompt` column beside them may be there: `trl` comes first in the detection order and takes rows whose
    # chosen and rejected are answers; whole conversations (UltraFeedback-binarized's) are this format's

    def looks_like(self, row: dict[str, Any]) -> bool:
        chosen = row.get("chosen")
        return not (isinstance(chosen, str) and TRANSCRIPT.match(chosen))

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        return pa.DataFrameSchema({decl.column("chosen"): conversation_column(), decl.column("rejected"):
                                   conversation_column(), **id_columns(decl)}, strict=False)

    def adapter(self, decl: Declaration) -> Adapter:
        return split_adapter(decl, split_implicit)

    def synth(self, decl: Declaration) -> type[SynthRows]:
        ch, rj = decl.column("chosen"), decl.column("rejected")
        return rows_class(TrlImplicitRows, decl, {
            **common_bad_kinds(),
            **id_bad_kinds(decl),
            "no_common_prompt": AdapterRejection.NO_COMMON_PROMPT,
            "text_beside_messages": AdapterRejection.NO_COMMON_PROMPT,
            "response_not_one_assistant_turn": AdapterRejection.RESPONSE_NOT_ONE_ASSISTANT_TURN,
            "chosen_ends_with_user": column_reason(ch, SchemaCheck.ENDS_WITH_ASSISTANT_TURN),
            "chosen_not_text": column_reason(ch, SchemaCheck.IS_TEXT_OR_MESSAGE_LIST),
            "missing_rejected": column_reason(rj, SchemaCheck.MISSING),
        })


class TrlImplicitRows(DeclaredRows):
    """Synthetic `trl-implicit` rows: the history and each answer, whole, under chosen and rejected (the better answer
    by the neutral label is the chosen one). A text row is the prompt, a blank line and the answer."""

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        chosen, rejected = (g["a"], g["b"]) if g["label"] >= 0 else (g["b"], g["a"])
        if g["conversational"]:
            def side(answer: str) -> list[dict[str, str]]:
                return [*(dict(m) for m in g["history"]), {"role": "assistant", "content": answer}]
        else:
            def side(answer: str) -> str:  # type: ignore[misc]
                return g["history"][-1]["content"] + "\n\n" + answer
        return self.with_id({self.col("chosen"): side(chosen), self.col("rejected"): side(rejected)})

    def spoil(self, g: dict[str, Any], kind: str) -> None:
        g["conversational"] = True  # a text's prompt is where the two first differ: the bad rows are conversations
        if not spoil_both(g, kind):
            super().spoil(g, kind)

    def damage(self, row: dict[str, Any], kind: str) -> None:
        ch, rj = self.col("chosen"), self.col("rejected")
        if kind == "no_common_prompt":
            row[rj][0] = {"role": "user", "content": "another question altogether"}
        elif kind == "text_beside_messages":
            row[ch] = " ".join(m["content"] for m in row[ch])
        elif kind == "response_not_one_assistant_turn":
            row[ch] += [{"role": "user", "content": "go on"}, {"role": "assistant", "content": "more of it"}]
        elif kind == "chosen_ends_with_user":
            row[ch].append({"role": "user", "content": "and one more question"})
        elif kind == "chosen_not_text":
            row[ch] = {"text": "an object"}
        elif kind == "missing_rejected":
            del row[rj]
        else:
            super().damage(row, kind)


FORMAT = TrlImplicitFormat()
