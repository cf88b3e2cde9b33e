"""`trl`: TRL's preference rows with an explicit prompt, `prompt` / `chosen` / `rejected`
(docs/sources.md#trl-explicit-prompt).

Standard form: three texts. Conversational form: the prompt a message list ending with a user turn, chosen and
rejected each a list of the assistant's turn(s) (several are joined by a blank line into one answer). The forms may
mix in one row. The chosen answer is the human's pick; which side becomes response A is drawn by a hash of the
source id (`shared.a_is_first`), so the label is +1 or -1 from A's side, and the raw label says which.
"""

from __future__ import annotations

from typing import Any

import pandera.pandas as pa

from common.reasons import SchemaCheck, column_reason
from schemas.pair import Rejection
from tasks.ingest.declared.formats.hh import prompt_history
from tasks.ingest.declared.formats.shared import (
    ID,
    ChosenFormat,
    DeclaredRows,
    answer_column,
    answer_text,
    assistant_only,
    chosen_pair,
    common_bad_kinds,
    ends_with,
    id_bad_kinds,
    id_columns,
    is_text_or_messages,
    prompt_column,
    row_source_id,
    rows_class,
    spoil_both,
)
from tasks.ingest.declared.model import Declaration
from tasks.ingest.sources.base import Adapter, AdapterContext, one_per_row
from tasks.ingest.synth_rows import SynthRows


class TrlFormat(ChosenFormat):
    name = "trl"
    required_columns = ("prompt", "chosen", "rejected")
    optional_columns = (ID,)

    def looks_like(self, row: dict[str, Any]) -> bool:
        """Answers under `chosen` and `rejected` (texts, or assistant turns): whole conversations there (a user turn
        first, as UltraFeedback-binarized's beside its `prompt`) are `trl-implicit`'s."""
        return all(is_text_or_messages(v) and ends_with(v, "assistant") and assistant_only(v)
                   for v in (row.get("chosen"), row.get("rejected")))

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        return pa.DataFrameSchema({decl.column("prompt"): prompt_column(), decl.column("chosen"): answer_column(),
                                   decl.column("rejected"): answer_column(), **id_columns(decl)}, strict=False)

    def adapter(self, decl: Declaration) -> Adapter:
        prompt, chosen, rejected = (decl.column(c) for c in self.required_columns)
        source_id = row_source_id(decl)
        history_of = prompt_history(decl)

        def to_pair(row: dict[str, Any], ctx: AdapterContext):
            history = history_of(row[prompt])
            if isinstance(history, Rejection):
                return history
            return chosen_pair(decl, source_id(row), history, answer_text(row[chosen]), answer_text(row[rejected]),
                               ctx)

        return one_per_row(to_pair)

    def synth(self, decl: Declaration) -> type[SynthRows]:
        p, ch, rj = (decl.column(c) for c in self.required_columns)
        return rows_class(TrlRows, decl, {
            **common_bad_kinds(),
            **id_bad_kinds(decl),
            "prompt_ends_with_assistant": column_reason(p, SchemaCheck.ENDS_WITH_USER_TURN),
            "chosen_ends_with_user": column_reason(ch, SchemaCheck.ENDS_WITH_ASSISTANT_TURN),
            "rejected_not_assistant_turns": column_reason(rj, SchemaCheck.ASSISTANT_TURNS_ONLY),
            "chosen_not_text": column_reason(ch, SchemaCheck.IS_TEXT_OR_MESSAGE_LIST),
            "missing_prompt": column_reason(p, SchemaCheck.MISSING),
        })


# the bad kinds written in the conversational form (the standard form cannot hold them)
_CONVERSATIONAL_KINDS = {"bad_role", "prompt_ends_with_assistant", "chosen_ends_with_user",
                         "rejected_not_assistant_turns"}


class TrlRows(DeclaredRows):
    """Synthetic `trl` rows: the better answer (by the neutral label; a tie: the first) is the chosen one."""

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        # chosen / rejected name no side: `swap` changes nothing a TRL row says
        chosen, rejected = (g["a"], g["b"]) if g["label"] >= 0 else (g["b"], g["a"])
        prompt = self.prompt(g)
        if g["conversational"]:
            chosen_v: Any = [{"role": "assistant", "content": chosen}]
            rejected_v: Any = [{"role": "assistant", "content": rejected}]
        else:
            chosen_v, rejected_v = chosen, rejected
        return self.with_id({self.col("prompt"): prompt, self.col("chosen"): chosen_v,
                             self.col("rejected"): rejected_v})

    def spoil(self, g: dict[str, Any], kind: str) -> None:
        if kind in _CONVERSATIONAL_KINDS:
            g["conversational"] = True
        if kind == "prompt_ends_with_assistant":
            g["history"].append({"role": "assistant", "content": "a trailing answer"})
        elif not spoil_both(g, kind):
            super().spoil(g, kind)

    def damage(self, row: dict[str, Any], kind: str) -> None:
        if kind == "chosen_ends_with_user":
            row[self.col("chosen")].append({"role": "user", "content": "and one more question"})
        elif kind == "rejected_not_assistant_turns":
            row[self.col("rejected")].insert(0, {"role": "user", "content": "a user turn in an answer"})
        elif kind == "chosen_not_text":
            row[self.col("chosen")] = 5
        elif kind == "missing_prompt":
            del row[self.col("prompt")]
        else:
            super().damage(row, kind)


FORMAT = TrlFormat()
