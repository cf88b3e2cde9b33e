"""`hh`: Anthropic HH-RLHF's rows, `chosen` / `rejected` transcripts of `\\n\\nHuman: ...` and `\\n\\nAssistant: ...`
turns (docs/sources.md#hh-anthropic-hh-rlhf-transcripts).

A transcript is parsed into messages at each `\\n\\nHuman:` / `\\n\\nAssistant:` marker (the first may open the text
without its blank line); each turn's text is stripped. It must start with a Human turn (else
`transcript_malformed`) and end with an Assistant turn (`conversation_not_ending_with_answer`); the two transcripts
must share every turn before their final answers (`multi_turn_divergent_history`; `no_common_prompt` when even the
first Human turns differ). The shared turns are the history, the final Assistant turns the answers. The chosen one is
the human's pick; which becomes response A is drawn by a hash of the source id.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandera.pandas as pa

from common.reasons import AdapterRejection, SchemaCheck, column_reason
from schemas.pair import Rejection
from schemas.raw import text_column
from tasks.ingest.declared.formats.shared import (
    ID,
    ChosenFormat,
    DeclaredRows,
    common_bad_kinds,
    id_bad_kinds,
    id_columns,
    rows_class,
    split_adapter,
    spoil_both,
    to_history,
)
from tasks.ingest.declared.model import Declaration
from tasks.ingest.normalize import split_shared_history
from tasks.ingest.sources.base import Adapter
from tasks.ingest.synth_rows import SynthRows

SPEAKERS = {"Human": "user", "Assistant": "assistant"}
_MARKER = re.compile(r"(?:^|\n\n)(Human|Assistant):")
TRANSCRIPT = re.compile(r"^\s*Human:.*\n\nAssistant:", re.DOTALL)  # what `auto` takes for an HH transcript


def parse_transcript(text: str) -> list[dict[str, str]] | None:
    """A transcript's messages, or None when it is none (no marker, or text before the first)."""
    text = text.lstrip()
    marks = list(_MARKER.finditer(text))
    if not marks or marks[0].start() != 0:
        return None
    return [{"role": SPEAKERS[m.group(1)], "content": text[m.end():nxt.start() if nxt else len(text)].strip()}
            for m, nxt in zip(marks, [*marks[1:], None])]


def transcript_prompt(text: Any, column: str) -> list[dict[str, str]] | Rejection:
    """A prompt written as a transcript (Nectar's `\\n\\nHuman: ...\\n\\nAssistant:`) as the history it holds: its
    turns, the empty Assistant turn that closes it dropped; a message list is kept as it is. Not a transcript
    starting with a Human turn is `transcript_malformed`; one whose last turn is not the user's (once the empty
    closing one is dropped) `<prompt>:ends_with_user_turn`."""
    if not isinstance(text, str):
        return to_history(text)
    turns = parse_transcript(text)
    if turns is None or turns[0]["role"] != "user":
        return Rejection([AdapterRejection.TRANSCRIPT_MALFORMED], f"{column}: not a transcript starting with a Human "
                                                                  "turn")
    if turns[-1]["role"] == "assistant" and not turns[-1]["content"]:
        turns = turns[:-1]
    if turns[-1]["role"] != "user":
        return Rejection([column_reason(column, SchemaCheck.ENDS_WITH_USER_TURN)], f"{len(turns)} turns")
    return turns


def prompt_history(decl: Declaration) -> Callable[[Any], list[dict[str, str]] | Rejection]:
    """A row's prompt -> its history, as the declaration reads prompts: a text is one user turn, unless
    `prompt_format = "hh"` (a transcript, parsed into turns); a message list is kept as it is."""
    if decl.prompt_format == "hh":
        column = decl.column("prompt")
        return lambda value: transcript_prompt(value, column)
    return to_history


def split_transcripts(chosen: str, rejected: str) -> tuple[list[dict[str, str]], str, str] | Rejection:
    """(history, chosen answer, rejected answer) of two HH transcripts, or why there is none."""
    sides = {"chosen": parse_transcript(chosen), "rejected": parse_transcript(rejected)}
    malformed = [side for side, turns in sides.items() if turns is None or turns[0]["role"] != "user"]
    if malformed:
        return Rejection([AdapterRejection.TRANSCRIPT_MALFORMED],
                         f"{' and '.join(malformed)}: not a transcript starting with a Human turn")
    c, r = sides["chosen"], sides["rejected"]
    assert c is not None and r is not None
    if c[-1]["role"] == "assistant" and r[-1]["role"] == "assistant" and c[0] != r[0]:
        return Rejection([AdapterRejection.NO_COMMON_PROMPT], "the first Human turns differ")
    split = split_shared_history(c, r)
    if isinstance(split, str):
        return Rejection([split], f"{len(c)} and {len(r)} turns")
    return split


class HhFormat(ChosenFormat):
    name = "hh"
    required_columns = ("chosen", "rejected")
    optional_columns = (ID,)

    def detect(self, columns: set[str]) -> bool:
        return super().detect(columns) and "prompt" not in columns

    def looks_like(self, row: dict[str, Any]) -> bool:
        chosen = row.get("chosen")
        return isinstance(chosen, str) and TRANSCRIPT.match(chosen) is not None

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        return pa.DataFrameSchema({decl.column("chosen"): text_column(), decl.column("rejected"): text_column(),
                                   **id_columns(decl)}, strict=False)

    def adapter(self, decl: Declaration) -> Adapter:
        return split_adapter(decl, split_transcripts)

    def synth(self, decl: Declaration) -> type[SynthRows]:
        ch, rj = decl.column("chosen"), decl.column("rejected")
        return rows_class(HhRows, decl, {
            **common_bad_kinds(drop=("bad_role",)),  # a transcript has no other roles
            **id_bad_kinds(decl),
            "transcript_malformed": AdapterRejection.TRANSCRIPT_MALFORMED,
            "starts_with_assistant": AdapterRejection.TRANSCRIPT_MALFORMED,
            "ends_with_human_turn": AdapterRejection.CONVERSATION_NOT_ENDING_WITH_ANSWER,
            "divergent_history": AdapterRejection.MULTI_TURN_DIVERGENT_HISTORY,
            "no_common_prompt": AdapterRejection.NO_COMMON_PROMPT,
            "chosen_not_text": column_reason(ch, SchemaCheck.IS_TEXT),
            "missing_rejected": column_reason(rj, SchemaCheck.MISSING),
        })


def transcript(history: list[dict[str, str]], answer: str | None) -> str:
    """Messages (and a final answer) as an HH transcript."""
    turns = [*history, *([{"role": "assistant", "content": answer}] if answer is not None else [])]
    names = {role: name for name, role in SPEAKERS.items()}
    return "".join(f"\n\n{names[m['role']]}: {m['content']}" for m in turns)


class HhRows(DeclaredRows):
    """Synthetic `hh` rows: the history and each answer as transcripts (the better answer by the neutral label is
    the chosen one)."""

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        chosen, rejected = (g["a"], g["b"]) if g["label"] >= 0 else (g["b"], g["a"])
        return self.with_id({self.col("chosen"): transcript(g["history"], chosen),
                             self.col("rejected"): transcript(g["history"], rejected)})

    def spoil(self, g: dict[str, Any], kind: str) -> None:
        if kind in ("divergent_history", "no_common_prompt") and len(g["history"]) < 3:
            g["history"] = [{"role": "user", "content": "Hello there."}, {"role": "assistant", "content": "Hi!"},
                            *g["history"]]
        if not spoil_both(g, kind):
            super().spoil(g, kind)

    def damage(self, row: dict[str, Any], kind: str) -> None:
        ch, rj = self.col("chosen"), self.col("rejected")
        if kind == "transcript_malformed":
            row[ch] = "Just an answer, with no turns at all."
        elif kind == "starts_with_assistant":
            row[ch] = row[ch].replace("\n\nHuman:", "\n\nAssistant:", 1)
        elif kind == "ends_with_human_turn":
            row[rj] += "\n\nHuman: And what else?"
        elif kind == "divergent_history":  # an earlier Assistant turn differs
            row[rj] = row[rj].replace("\n\nAssistant: ", "\n\nAssistant: Well, ", 1)
        elif kind == "no_common_prompt":
            row[rj] = row[rj].replace("\n\nHuman: ", "\n\nHuman: Something else. ", 1)
        elif kind == "chosen_not_text":
            row[ch] = ["\n\nHuman: hi", "\n\nAssistant: hello"]
        elif kind == "missing_rejected":
            del row[rj]
        else:
            super().damage(row, kind)


FORMAT = HhFormat()
