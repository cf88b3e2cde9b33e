"""`pairwise`: a prompt, two responses and a preference column whose values the declaration names
(docs/sources.md#pairwise-two-responses-and-a-preference).

`label = { a = "1", b = "2", tie = ["tie"], both_bad = ["neither"] }`: each key a value or a list of values; `a`
and `b` required, `tie` and `both_bad` optional. Values are compared as text (`label_text`): 1, 1.0 and "1" are the
same value, true is "true", outer white space is ignored, case is not. A row's preference that is none of them is
quarantined as `label_outside_declared_scale`; a null, absent or NaN one (pandas writes a missing number as NaN) is
no label: the pair lands unlabelled (`human_label` None), judged but never counted as labelled. Response A is the
source's `response_a`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandera.pandas as pa

from common.reasons import AdapterRejection, SchemaCheck, ValueFault, column_reason
from schemas.pair import CandidatePair, Rejection, model_names
from schemas.raw import text_column
from tasks.ingest.declared.formats.hh import prompt_history
from tasks.ingest.declared.formats.shared import (
    ID,
    DeclaredFormat,
    DeclaredRows,
    common_bad_kinds,
    id_bad_kinds,
    id_columns,
    prompt_column,
    row_source_id,
    rows_class,
)
from tasks.ingest.declared.model import Declaration
from tasks.ingest.sources.base import Adapter, AdapterContext, one_per_row
from tasks.ingest.synth_rows import SynthRows

# label key -> (human label from A's side, both_bad)
OUTCOMES = {"a": (1.0, False), "b": (-1.0, False), "tie": (0.0, False), "both_bad": (0.0, True)}
REQUIRED_LABEL_KEYS = ("a", "b")


def label_text(v: Any) -> str | None:
    """A label value as the text it is compared by; None for a value that is no scalar (a list, an object, NaN)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, str):
        return v.strip()
    return None


def _values(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else [v]


def label_values(label: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each outcome's declared values as compared (the declaration's order kept, repeats dropped)."""
    out: dict[str, list[str]] = {}
    for key in OUTCOMES:
        if key in label:
            texts = [t for t in (label_text(v) for v in _values(label[key])) if t is not None]
            out[key] = list(dict.fromkeys(texts))
    return out


class PairwiseFormat(DeclaredFormat):
    name = "pairwise"
    required_columns = ("prompt", "response_a", "response_b", "preference")
    optional_columns = (ID,)
    label_keys = frozenset(OUTCOMES)
    model_keys = ("a", "b")

    def check_label(self, decl: Declaration) -> list[str]:
        mistakes = [f"label.{key}: missing (pairwise needs the preference values of {' and '.join(REQUIRED_LABEL_KEYS)})"
                    for key in REQUIRED_LABEL_KEYS if key not in decl.label]
        for key in OUTCOMES:
            if key not in decl.label:
                continue
            values = _values(decl.label[key])
            if not values:
                mistakes.append(f"label.{key}: an empty list (name at least one value, or leave the key out)")
            bad = [v for v in values if label_text(v) is None or label_text(v) == ""]
            if bad:
                mistakes.append(f"label.{key}: {bad[0]!r} is no label value (a text, a number or a boolean)")
        owner: dict[str, str] = {}
        for key, texts in label_values(decl.label).items():
            for t in texts:
                if t in owner:
                    mistakes.append(f"label.{key}: {t!r} is declared for {owner[t]!r} too (compared as text)")
                owner.setdefault(t, key)
        return mistakes

    def names_models(self, decl: Declaration) -> bool:
        return set(decl.models) == set(self.model_keys)

    def finite_checked(self, decl: Declaration) -> tuple[str, ...]:
        return (decl.column("preference"),)  # a NaN preference is no label, not a fault of the row

    def raw_schema(self, decl: Declaration) -> pa.DataFrameSchema:
        models = ({decl.models[k]: text_column(nullable=True) for k in self.model_keys}
                  if self.names_models(decl) else {})
        return pa.DataFrameSchema({
            decl.column("prompt"): prompt_column(),
            decl.column("response_a"): text_column(),
            decl.column("response_b"): text_column(),
            # the column must be in the file; a null in a row is no label, not a fault
            decl.column("preference"): pa.Column(None, nullable=True),
            **models,
            **id_columns(decl),
        }, strict=False)

    def adapter(self, decl: Declaration) -> Adapter:
        prompt, a, b, preference = (decl.column(c) for c in self.required_columns)
        outcome = {t: OUTCOMES[key] for key, texts in label_values(decl.label).items() for t in texts}
        declared = ", ".join(f"{key} {texts}" for key, texts in label_values(decl.label).items())
        source_id = row_source_id(decl)
        models = dict(decl.models) if self.names_models(decl) else {}
        history_of = prompt_history(decl)

        def to_pair(row: dict[str, Any], ctx: AdapterContext) -> CandidatePair | Rejection:
            history = history_of(row[prompt])
            if isinstance(history, Rejection):
                return history
            value = row.get(preference)
            human_label, both_bad, raw = None, False, None
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                raw = label_text(value)
                if raw not in outcome:
                    return Rejection([AdapterRejection.LABEL_OUTSIDE_DECLARED_SCALE],
                                     f"{preference} = {value!r}; declared: {declared}"[:500])
                human_label, both_bad = outcome[raw]
            return CandidatePair(
                source=decl.name, source_id=source_id(row), history=history, response_a=row[a],
                response_b=row[b], human_label=human_label, raw_label=raw, both_bad=both_bad, domain=decl.domain,
                language=decl.language,
                metadata={"split": ctx.split,
                          **(model_names(row.get(models["a"]), row.get(models["b"])) if models else {})},
            )

        return one_per_row(to_pair)

    def label_meaning(self, decl: Declaration) -> dict[str, Any]:
        values = {key: sorted(texts) for key, texts in label_values(decl.label).items()}  # the order means nothing
        return {"format": self.name, "compared_as": "text", "values": values,
                "human_label": {"a": 1.0, "b": -1.0, "tie": 0.0, "both_bad": "0.0, flagged both_bad",
                                "null": "no label"},
                "clear_label": self.clear}

    def synth(self, decl: Declaration) -> type[SynthRows]:
        p, ra, rb, pref = (decl.column(c) for c in self.required_columns)
        kinds = {
            **common_bad_kinds(),
            **id_bad_kinds(decl),
            "label_outside_declared": AdapterRejection.LABEL_OUTSIDE_DECLARED_SCALE,
            "label_not_a_value": AdapterRejection.LABEL_OUTSIDE_DECLARED_SCALE,
            "prompt_ends_with_assistant": column_reason(p, SchemaCheck.ENDS_WITH_USER_TURN),
            "prompt_not_text": column_reason(p, SchemaCheck.IS_TEXT_OR_MESSAGE_LIST),
            "missing_response": column_reason(rb, SchemaCheck.MISSING),
            "response_not_text": column_reason(ra, SchemaCheck.IS_TEXT),
        }
        if self.names_models(decl):
            kinds["surrogate_in_model"] = ValueFault.INVALID_UTF8.of(decl.models["a"])
            kinds["model_not_text"] = column_reason(decl.models["b"], SchemaCheck.IS_TEXT)
        return rows_class(PairwiseRows, decl, kinds)


class PairwiseRows(DeclaredRows):
    """Synthetic `pairwise` rows: the neutral label's sign picks an `a` or `b` value (0: a `tie` value, or no label
    when none is declared); some rows carry no label, and `both_bad` rows when the declaration has that value."""

    UNLABELLED_RATE = 0.05
    BOTH_BAD_RATE = 0.03

    def good(self, contaminate: int | None = None) -> dict[str, Any]:
        g = super().good(contaminate)
        roll = self.rng.random()
        g["outcome"] = ("none" if roll < self.UNLABELLED_RATE else
                        "both_bad" if roll < self.UNLABELLED_RATE + self.BOTH_BAD_RATE else "label")
        return g

    def _value(self, key: str) -> Any:
        values = label_values(self.DECL.label).get(key)
        if not values:
            return None
        raw = _values(self.DECL.label[key])  # written as declared: a number stays a number
        return self.rng.choice(raw)

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        a, b, label = self.sides(g, swap)
        outcome = g.get("outcome", "label")
        if outcome == "none":
            value = None
        elif outcome == "both_bad":
            value = self._value("both_bad")
        else:
            value = self._value("a" if label > 0 else "b" if label < 0 else "tie")
        row = {self.col("prompt"): self.prompt(g), self.col("response_a"): a, self.col("response_b"): b,
               self.col("preference"): value}
        if set(self.DECL.models) == {"a", "b"}:
            first, second = self.rng.sample(self.models, 2)
            row |= {self.DECL.models["a"]: first, self.DECL.models["b"]: second}
        return self.with_id(row)

    def spoil(self, g: dict[str, Any], kind: str) -> None:
        if kind in ("bad_role", "prompt_ends_with_assistant"):
            g["conversational"] = True
        g["outcome"] = "label"
        if kind == "prompt_ends_with_assistant":
            g["history"].append({"role": "assistant", "content": "a trailing answer"})
        else:
            super().spoil(g, kind)

    def damage(self, row: dict[str, Any], kind: str) -> None:
        if kind == "label_outside_declared":
            row[self.col("preference")] = "none of the declared values"
        elif kind == "label_not_a_value":
            row[self.col("preference")] = ["a", "list"]
        elif kind == "prompt_not_text":
            row[self.col("prompt")] = {"text": "an object"}
        elif kind == "missing_response":
            del row[self.col("response_b")]
        elif kind == "response_not_text":
            row[self.col("response_a")] = 42
        elif kind == "surrogate_in_model":
            row[self.DECL.models["a"]] = "gpt-large-2\ud800"
        elif kind == "model_not_text":
            row[self.DECL.models["b"]] = 7
        else:
            super().damage(row, kind)


FORMAT = PairwiseFormat()
