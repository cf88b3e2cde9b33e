"""What the formats of declared sources share: the checks of a declaration every format makes (its `columns`,
`models` and label keys), the optional `id` column, the raw-schema columns of prompts and answers, which side
becomes response A, and the base of their synthetic rows.

Reasons name the file's columns (`instruction:ends_with_user_turn`), as a built-in source's do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

import pandera.pandas as pa

from common.reasons import SchemaCheck, column_reason
from schemas import checks as c
from schemas.pair import CandidatePair, Rejection
from schemas.raw import element_check
from tasks.ingest.declared.model import PROMPT_FORMATS, Declaration, Format
from tasks.ingest.normalize import row_hash
from tasks.ingest.sources.base import Adapter, AdapterContext, one_per_row
from tasks.ingest.synth_rows import BAD_KINDS_COMMON, SynthRows

ID = "id"  # the optional id column every format takes
CHOSEN_CLEAR_LABEL = 1.0  # a pick between two answers is one step of the scale: clear, as an arena vote


# ---------------------------------------------------------------- values


def is_id(v: Any) -> bool:
    """An id: a non-empty text or an integer (a bool is no id)."""
    return (isinstance(v, str) and bool(v.strip())) or (isinstance(v, int) and not isinstance(v, bool))


def is_text_or_messages(v: Any) -> bool:
    return isinstance(v, str) or c.is_message_list(v)


def ends_with(v: Any, role: str) -> bool:
    """A message list whose last message is `role`'s (a text passes: it has no turns)."""
    if not isinstance(v, list):
        return True
    return bool(v) and isinstance(v[-1], dict) and v[-1].get("role") == role


def assistant_only(v: Any) -> bool:
    """A message list of assistant turns only (a text passes)."""
    return not isinstance(v, list) or all(isinstance(m, dict) and m.get("role") == "assistant" for m in v)


def messages(v: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The messages with their role and content alone (a source's other keys stay in the raw row)."""
    return [{"role": m["role"], "content": m["content"]} for m in v]


def to_history(prompt: str | list[dict[str, Any]]) -> list[dict[str, str]]:
    """A prompt as the pair's history: a text is one user turn, a message list is kept as it is."""
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else messages(prompt)


def answer_text(v: str | list[dict[str, Any]]) -> str:
    """An answer as one text: several assistant turns (TRL's conversational form allows them) joined by a blank line."""
    return v if isinstance(v, str) else "\n\n".join(m["content"] for m in v)


def a_is_first(pair_source_id: str) -> bool:
    """Whether the first-named answer (the chosen, the better rated) is response A: half the pairs each way, the same
    on every run. A source whose A always won would make the pool's A side look better (confounding the audit of the
    judge's position bias) and give the calibration labels of one sign only."""
    return hashlib.blake2b(pair_source_id.encode("utf-8", "surrogatepass"), digest_size=1).digest()[0] < 128


# ---------------------------------------------------------------- raw-schema columns


def prompt_column() -> pa.Column:
    """A prompt: a text (one user turn) or a message list ending with a user turn."""
    return pa.Column(None, [element_check(is_text_or_messages, SchemaCheck.IS_TEXT_OR_MESSAGE_LIST),
                            element_check(lambda v: ends_with(v, "user"), SchemaCheck.ENDS_WITH_USER_TURN)])


def answer_column() -> pa.Column:
    """An answer: a text, or a message list of assistant turns (TRL's conversational chosen / rejected)."""
    return pa.Column(None, [element_check(is_text_or_messages, SchemaCheck.IS_TEXT_OR_MESSAGE_LIST),
                            element_check(lambda v: ends_with(v, "assistant"), SchemaCheck.ENDS_WITH_ASSISTANT_TURN),
                            element_check(assistant_only, SchemaCheck.ASSISTANT_TURNS_ONLY)])


def conversation_column() -> pa.Column:
    """A whole conversation (a text, or a message list ending with the assistant's answer) whose start is shared."""
    return pa.Column(None, [element_check(is_text_or_messages, SchemaCheck.IS_TEXT_OR_MESSAGE_LIST),
                            element_check(lambda v: ends_with(v, "assistant"), SchemaCheck.ENDS_WITH_ASSISTANT_TURN)])


def id_columns(decl: Declaration) -> dict[str, pa.Column]:
    """The id column's schema when the declaration maps one."""
    if ID not in decl.columns:
        return {}
    return {decl.column(ID): pa.Column(None, element_check(is_id, SchemaCheck.IS_ID))}


def row_source_id(decl: Declaration) -> Callable[[dict[str, Any]], str]:
    """raw row -> its id: the declared id column's value as text, else a content hash of the whole row (stable
    across revisions and splits, as HelpSteer3's)."""
    if ID in decl.columns:
        column = decl.column(ID)
        return lambda row: str(row[column])
    return lambda row: "row-" + row_hash(row)[:24]


# ---------------------------------------------------------------- the declaration's checks


def _text_values(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip())


class DeclaredFormat(Format):
    """A format's shared checks: `columns` keys it knows, mapped to distinct non-empty names; `models` keys it
    takes; label keys it knows. A format adds its own label rule's checks in `check_label`."""

    model_keys: ClassVar[tuple[str, ...]] = ()  # the `models` keys it takes, all or none
    clear: ClassVar[float] = CHOSEN_CLEAR_LABEL

    def known_columns(self) -> tuple[str, ...]:
        return (*self.required_columns, *self.optional_columns, *self.inner_columns)

    def check(self, decl: Declaration) -> list[str]:
        mistakes = []
        known = self.known_columns()
        for logical, name in decl.columns.items():
            if logical not in known:
                mistakes.append(f"columns.{logical}: {self.name} has no column {logical!r} (it knows "
                                f"{', '.join(known)})")
            elif not _text_values(name):
                mistakes.append(f"columns.{logical}: the file's column name must be a non-empty text, not {name!r}")
        top = [c for c in (*self.required_columns, *self.optional_columns) if c != ID or ID in decl.columns]
        mistakes += _shared_names("columns", {c: decl.column(c) for c in top})
        mistakes += _shared_names("columns", {c: decl.column(c) for c in self.inner_columns})
        if decl.models and not self.model_keys:
            mistakes.append(f"models: {self.name} names no models (its rows hold no model column)")
        elif decl.models:
            for key in decl.models:
                if key not in self.model_keys:
                    mistakes.append(f"models.{key}: {self.name} takes models {{{', '.join(self.model_keys)}}}")
            for key in self.model_keys:
                if key not in decl.models:
                    mistakes.append(f"models.{key}: missing ({self.name} takes all of "
                                    f"{', '.join(self.model_keys)} or none)")
                elif not _text_values(decl.models[key]):
                    mistakes.append(f"models.{key}: the column name must be a non-empty text, not "
                                    f"{decl.models[key]!r}")
            if set(decl.models) == set(self.model_keys):
                taken = {decl.column(c) for c in self.known_columns() if c != ID or ID in decl.columns}
                mistakes += [f"models.{k}: {v!r} is already the {self.name} column of another role"
                             for k, v in decl.models.items() if v in taken]
                mistakes += _shared_names("models", dict(decl.models))
        for key in decl.label:
            if key not in self.label_keys:
                mistakes.append(f"label.{key}: {self.name} has no label key {key!r}"
                                + (f" (it knows {', '.join(sorted(self.label_keys))})" if self.label_keys
                                   else " (its label is implicit: declare no label)"))
        if decl.prompt_format is not None:
            if "prompt" not in self.required_columns:
                mistakes.append(f"prompt_format: {self.name} has no prompt column (formats with one: trl, pairwise, "
                                "rated)")
            elif decl.prompt_format not in PROMPT_FORMATS:
                mistakes.append(f"prompt_format: {decl.prompt_format!r} is not a prompt format (it knows "
                                f"{', '.join(PROMPT_FORMATS)}: a Human/Assistant transcript)")
        return mistakes + self.check_label(decl)

    def check_label(self, decl: Declaration) -> list[str]:
        return []

    def detect(self, columns: set[str]) -> bool:
        return set(self.required_columns) <= columns

    def source_id(self, decl: Declaration) -> Callable[[dict[str, Any]], str]:
        return row_source_id(decl)

    def clear_label(self, decl: Declaration) -> float:
        return self.clear


def _shared_names(key: str, names: Mapping[str, str]) -> list[str]:
    """A mistake for each file column given to two roles."""
    seen: dict[str, str] = {}
    mistakes = []
    for role, name in names.items():
        if name in seen:
            mistakes.append(f"{key}.{role}: {name!r} is the column of {seen[name]!r} too")
        seen.setdefault(name, role)
    return mistakes


# ---------------------------------------------------------------- chosen / rejected formats


PREFERRED = "preferred"  # the one label key a chosen / rejected format takes: `preferred = "chosen"`


class ChosenFormat(DeclaredFormat):
    """A format whose rows name a chosen answer (the human's pick) and a rejected one: `trl`, `trl-implicit`, `hh`.
    The label is implicit; `label = { preferred = "chosen" }` may say so."""

    label_keys = frozenset({PREFERRED})

    def check_label(self, decl: Declaration) -> list[str]:
        if PREFERRED in decl.label and decl.label[PREFERRED] != "chosen":
            return [f"label.{PREFERRED}: {self.name}'s preferred answer is the chosen one; "
                    f"{decl.label[PREFERRED]!r} is not a choice"]
        return []

    def label_meaning(self, decl: Declaration) -> dict[str, Any]:
        return {"format": self.name, "preferred": "chosen",
                "human_label": "+1 when response A is the chosen answer, -1 when B is; A drawn by a hash of the "
                               "source id", "clear_label": self.clear}


def chosen_pair(decl: Declaration, sid: str, history: list[dict[str, str]], chosen: str, rejected: str,
                ctx: AdapterContext, **metadata: Any) -> CandidatePair:
    """The pair of a chosen and a rejected answer: which is response A drawn by a hash of the source id."""
    first = a_is_first(sid)
    a, b = (chosen, rejected) if first else (rejected, chosen)
    return CandidatePair(
        source=decl.name, source_id=sid, history=history, response_a=a, response_b=b,
        human_label=1.0 if first else -1.0, raw_label="chosen=A" if first else "chosen=B",
        domain=decl.domain, language=decl.language,
        metadata={"split": ctx.split, "chosen": "a" if first else "b", **metadata},
    )


def split_adapter(decl: Declaration,
                  split: Callable[[Any, Any], tuple[list[dict[str, str]], str, str] | Rejection]) -> Adapter:
    """The adapter of a format whose `chosen` and `rejected` each hold the whole conversation: `split` finds their
    shared history and two answers (or a Rejection), and the chosen pair is made of them (`trl-implicit`, `hh`)."""
    chosen, rejected = decl.column("chosen"), decl.column("rejected")
    source_id = row_source_id(decl)

    def to_pair(row: dict[str, Any], ctx: AdapterContext):
        found = split(row[chosen], row[rejected])
        if isinstance(found, Rejection):
            return found
        history, chosen_answer, rejected_answer = found
        return chosen_pair(decl, source_id(row), history, chosen_answer, rejected_answer, ctx)

    return one_per_row(to_pair)


# ---------------------------------------------------------------- synthetic rows


class DeclaredRows(SynthRows):
    """Synthetic rows of a format under a declaration's column names: `Format.synth(decl)` makes a subclass with
    `DECL` set (and the bad kinds whose reasons name its columns)."""

    DECL: ClassVar[Declaration]

    def col(self, logical: str) -> str:
        return self.DECL.column(logical)

    def good(self, contaminate: int | None = None) -> dict[str, Any]:
        g = super().good(contaminate)
        # a one-turn prompt is written as a text or a message list, half each (a format takes both)
        g["conversational"] = len(g["history"]) > 1 or self.rng.random() < 0.5
        return g

    def near(self, g: dict[str, Any], rate: float) -> dict[str, Any]:
        return {**super().near(g, rate), **{k: v for k, v in g.items() if k not in ("history", "a", "b")}}

    def prompt(self, g: dict[str, Any]) -> Any:
        """The prompt of `g` as the declaration reads it: a message list (conversational) or its last user turn's
        text; under `prompt_format = "hh"` a transcript of every turn closed by an empty `Assistant:` (Nectar's)."""
        if self.DECL.prompt_format == "hh":
            return "".join(f"\n\n{'Human' if m['role'] == 'user' else 'Assistant'}: {m['content']}"
                           for m in g["history"]) + "\n\nAssistant:"
        return [dict(m) for m in g["history"]] if g["conversational"] else g["history"][-1]["content"]

    def with_id(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row with a fresh id when the declaration maps one (an exact duplicate gets its own id, as arena's)."""
        return {self.col(ID): self.uid(), **row} if ID in self.DECL.columns else row

    def spoil(self, g: dict[str, Any], kind: str) -> None:
        if kind == "bad_role":
            g["history"].insert(0, {"role": "tool", "content": "tool output"})
        else:
            super().spoil(g, kind)

    def damage(self, row: dict[str, Any], kind: str) -> None:
        if kind == "missing_id":
            del row[self.col(ID)]
        elif kind == "id_not_an_id":
            row[self.col(ID)] = ["not", "an", "id"]
        else:
            super().damage(row, kind)


def id_bad_kinds(decl: Declaration) -> dict[str, str]:
    """The bad rows of a declared id column, when there is one."""
    if ID not in decl.columns:
        return {}
    return {"missing_id": column_reason(decl.column(ID), SchemaCheck.MISSING),
            "id_not_an_id": column_reason(decl.column(ID), SchemaCheck.IS_ID)}


def rows_class(base: type[DeclaredRows], decl: Declaration, bad_kinds: Mapping[str, str]) -> type[DeclaredRows]:
    """`base` bound to `decl`, planting `bad_kinds` (kind -> the reason it must get); a transcript prompt
    (`prompt_format = "hh"`) has no role but Human and Assistant to spoil."""
    kinds = {k: v for k, v in bad_kinds.items() if not (decl.prompt_format == "hh" and k == "bad_role")}
    return type(base.__name__, (base,), {"DECL": decl, "BAD_KINDS": kinds, "__module__": base.__module__})


# answers spoiled on both sides: which of a chosen pair's answers becomes response A is the hash's choice
BOTH_SIDES = {"empty_response": "   \n ", "invisible_answer": "\u200b\u200b\ufeff", "nul_answer": "\x00\x00 "}


def spoil_both(g: dict[str, Any], kind: str) -> bool:
    """Spoil both answers of `g` for the kinds of `BOTH_SIDES` (either may become response A); False for others."""
    if kind not in BOTH_SIDES:
        return False
    g["a"] = BOTH_SIDES[kind]
    g["b"] = BOTH_SIDES[kind] + " "
    return True


def common_bad_kinds(drop: Iterable[str] = ()) -> dict[str, str]:
    dropped = set(drop)
    return {k: v for k, v in BAD_KINDS_COMMON.items() if k not in dropped}
