"""What every source's synthetic rows are made of: a source's `Source.synth` is a `SynthRows` class beside its
adapter, which says how a neutral row (a history, two answers, a label) looks in its raw form and which bad
rows it plants. This module holds what they share (the text, the neutral rows, the bad rows every shape knows,
the manifest) and imports no source; `tasks.ingest.synth` plants and writes the rows of any registered source.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from common.reasons import ReadFault, SchemaCheck, ValueFault, column_reason
from tasks.ingest.latent import human_label, latent_quality

_VOCAB_SIZE = 6000

# The bad rows of every source whose rows hold a chat history and two answers, with the quarantine reason the
# pipeline must give each (a source adds its own in its `SynthRows.BAD_KINDS`).
BAD_KINDS_COMMON: dict[str, str] = {
    "malformed_json": ReadFault.MALFORMED_JSON,
    "not_an_object": ReadFault.NOT_AN_OBJECT,
    "bad_role": column_reason("history", SchemaCheck.ROLES_ALLOWED),
    "empty_response": column_reason("response_a", SchemaCheck.NOT_EMPTY),
    "identical_responses": SchemaCheck.RESPONSES_DIFFER,
    "too_long": column_reason("utf8_bytes", SchemaCheck.FITS_JUDGE_CONTEXT.prefix),
    "lone_surrogate": ValueFault.INVALID_UTF8.prefix,
    "empty_last_user_turn": column_reason("history", SchemaCheck.LAST_USER_TURN_NOT_EMPTY),
    # Hostile rows: each once stopped a whole run.
    "nan_language": ValueFault.NOT_FINITE.of("language"),
    "surrogate_in_language": ValueFault.INVALID_UTF8.of("language"),
    "too_deep_for_parsers": ReadFault.JSON_TOO_DEEP,
    "too_deep_for_storage": ValueFault.JSON_TOO_DEEP,
    "invisible_answer": column_reason("response_a", SchemaCheck.NOT_EMPTY),
    "nul_answer": column_reason("response_b", SchemaCheck.NOT_EMPTY),
}
# bad kind -> (field, a value of the wrong kind) for the common kinds (JSON writes NaN as a literal)
_COMMON_ROW_VALUES: dict[str, tuple[str, Any]] = {
    "nan_language": ("language", float("nan")),
    "surrogate_in_language": ("language", "en\ud800"),
}


@dataclass
class SynthManifest:
    kind: str
    seed: int
    rows: int = 0
    exact_duplicates: list[tuple[int, int]] = field(default_factory=list)  # (row, original row)
    near_duplicates: list[tuple[int, int, float]] = field(default_factory=list)  # (row, original, edit rate)
    contaminated: list[tuple[int, int]] = field(default_factory=list)  # (row, eval prompt index)
    bad_rows: dict[int, tuple[str, str]] = field(default_factory=dict)  # row -> (kind, expected reason)
    valid_multi_turn: list[int] = field(default_factory=list)
    # kinds that make several pairs of a row (ultrafeedback): row -> the valid pairs it makes (bad rows that still
    # make some included), and the rows whose completions all tie (quarantined as `no_clear_preference`)
    pairs: dict[int, int] = field(default_factory=dict)
    no_clear_preference: list[int] = field(default_factory=list)
    # the written file's revision (`tasks.ingest.read.file_revision`): an ingest of exactly these bytes marks its run
    # as reading synthetic rows (`tasks.ingest.synth.written_by_synth`), and a card of its pairs says so
    revision: str = ""

    def to_json(self) -> str:
        d = asdict(self)
        d["bad_rows"] = {str(k): list(v) for k, v in self.bad_rows.items()}
        d["pairs"] = {str(k): v for k, v in self.pairs.items()}
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> SynthManifest:
        d = json.loads(text)
        d["exact_duplicates"] = [tuple(x) for x in d["exact_duplicates"]]
        d["near_duplicates"] = [tuple(x) for x in d["near_duplicates"]]
        d["contaminated"] = [tuple(x) for x in d["contaminated"]]
        d["bad_rows"] = {int(k): tuple(v) for k, v in d["bad_rows"].items()}
        d["pairs"] = {int(k): v for k, v in d.get("pairs", {}).items()}
        return cls(**d)


class TextMaker:
    """Zipf-distributed pseudo-words in sentences: text with realistic shingle statistics."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        lengths = self.rng.integers(2, 11, _VOCAB_SIZE)
        words = {"".join(self.rng.choice(letters, n)) for n in lengths}
        self.vocab = sorted(words)
        self.vocab_end = [w + "." for w in self.vocab]
        ranks = np.arange(1, len(self.vocab) + 1)
        p = 1.0 / ranks**1.05
        self.p = p / p.sum()

    def words(self, n: int) -> list[str]:
        return [self.vocab[i] for i in self.rng.choice(len(self.vocab), size=n, p=self.p)]

    def text(self, n_bytes: int) -> str:
        n = max(3, int(n_bytes / 6.3))  # mean word + space is about 6.3 bytes
        idx = self.rng.choice(len(self.vocab), size=n, p=self.p)
        ends = self.rng.random(n) < 1 / 12
        out = [self.vocab_end[i] if e else self.vocab[i] for i, e in zip(idx.tolist(), ends.tolist())]
        out[0] = out[0].capitalize()
        return " ".join(out)

    def edit(self, text: str, rate: float) -> str:
        """Substitute about `rate` of the words: a near duplicate."""
        words = text.split(" ")
        n = max(1, int(round(len(words) * rate)))
        positions = self.rng.choice(len(words), size=min(n, len(words)), replace=False)
        fresh = self.words(len(positions))
        for pos, w in zip(positions.tolist(), fresh):
            words[pos] = w
        return " ".join(words)


def pair_sizes(rng: random.Random, mean_pair_bytes: int) -> tuple[int, int, int]:
    """Bytes of (history, response 1, response 2): lognormal around a median pair size."""
    total = mean_pair_bytes * rng.lognormvariate(0, 0.35)
    return int(total * 0.34), int(total * 0.33 * rng.uniform(0.6, 1.4)), int(total * 0.33 * rng.uniform(0.6, 1.4))


def too_deep() -> list[Any]:
    """A value that parses, but deeper than any writer should be asked to go."""
    deep: Any = "leaf"
    for _ in range(200):
        deep = [deep]
    return deep


class SynthRows:
    """A source's synthetic rows. A good row is kept in a neutral form (`good`: a history, two answers, a label in
    -3..3 from A's side) and written in the source's raw form by `render`; a bad row of each kind of `BAD_KINDS`
    is spoiled in its neutral form (`spoil`) or in its raw form (`damage`). A source subclasses it beside its
    adapter (a source whose rows are of another shape overrides `good`, `near` and `bad` too) and declares it as
    `Source.synth`."""

    BAD_KINDS: ClassVar[dict[str, str]] = BAD_KINDS_COMMON  # every bad row it plants -> the reason it must get
    ROW_VALUES: ClassVar[dict[str, tuple[str, Any]]] = {}  # bad kind -> (field, a value of the wrong kind)

    def __init__(self, seed: int, pair_bytes: int, eval_prompts: list[str]):
        self.rng = random.Random(seed)
        self.tm = TextMaker(seed)
        self.pair_bytes = pair_bytes
        self.eval_prompts = eval_prompts
        # made-up names in the shape of arena's (family, version, size): the bias audit groups them by family
        self.models = [f"{family}-{v}" for family in ("gpt", "claude", "llama", "gemini", "qwen", "mistral")
                       for v in ("large-2", "small-1")]
        self.last_pairs = 0  # the valid pairs the last bad row still makes (a source that makes several a row)

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128)))

    def good(self, contaminate: int | None = None) -> dict[str, Any]:
        h, r1, r2 = pair_sizes(self.rng, self.pair_bytes)
        turns = 1 if self.rng.random() < 0.7 else self.rng.choice([2, 3])
        history: list[dict[str, str]] = []
        per_msg = max(40, h // (2 * turns - 1))
        for t in range(turns):
            history.append({"role": "user", "content": self.tm.text(per_msg)})
            if t < turns - 1:
                history.append({"role": "assistant", "content": self.tm.text(per_msg)})
        if contaminate is not None:
            history[-1]["content"] += "\n\n" + self.eval_prompts[contaminate]
        a, b = self.tm.text(r1), self.tm.text(r2)
        # The label follows the answers' latent qualities (the stand-in's verdicts follow them too), with a
        # rater's noise: calibration can then be checked against labels and the truth behind them.
        return {"history": history, "a": a, "b": b,
                "label": human_label(latent_quality(a), latent_quality(b), self.rng)}

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        """The neutral row `g` as the source's raw row (A and B swapped, the label with them, under `swap`)."""
        raise NotImplementedError

    @staticmethod
    def sides(g: dict[str, Any], swap: bool) -> tuple[str, str, int]:
        """(answer A, answer B, label from A's side) of the neutral row `g`, swapped under `swap`."""
        return (g["b"], g["a"], -g["label"]) if swap else (g["a"], g["b"], g["label"])

    def near(self, g: dict[str, Any], rate: float) -> dict[str, Any]:
        return {
            "history": [dict(m, content=self.tm.edit(m["content"], rate)) for m in g["history"]],
            "a": self.tm.edit(g["a"], rate),
            "b": self.tm.edit(g["b"], rate),
            "label": g["label"],
        }

    def bad(self, kind: str) -> dict[str, Any] | str:
        """One bad row of `kind`: a dict, or raw line text for rows that are not JSON objects."""
        line = self.unparsable(kind)
        if line is not None:
            return line
        g = self.good()
        self.spoil(g, kind)
        row = self.render(g)
        self.damage(row, kind)
        return row

    def unparsable(self, kind: str) -> str | None:
        """The line of a bad row that is not a JSON object, or None for the other kinds."""
        if kind == "malformed_json":
            return '{"context": [{"role": "user", "content": "truncated ' + self.uid()
        if kind == "not_an_object":
            return json.dumps(["not", "an", "object", self.uid()])
        if kind == "too_deep_for_parsers":  # past orjson's and the standard library's nesting limits
            return '{"id": "%s", "context": %s%s}' % (self.uid(), "[" * 5000, "]" * 5000)
        return None

    def spoil(self, g: dict[str, Any], kind: str) -> None:
        """Break the neutral row `g` as a bad row of `kind` (the kinds broken before the row is rendered)."""
        if kind == "empty_response":
            g["a"] = "   \n "
        elif kind == "identical_responses":
            g["b"] = g["a"]
        elif kind == "too_long":
            g["a"] = self.tm.text(230_000)  # past 8 bytes per token of the default input budget
        elif kind == "lone_surrogate":
            g["b"] = g["b"][:40] + "\ud800" + g["b"][40:]
        elif kind == "empty_last_user_turn":
            g["history"][-1]["content"] = " "
        elif kind == "invisible_answer":
            g["a"] = "\u200b\u200b\ufeff"
        elif kind == "nul_answer":
            g["b"] = "\x00\x00 "

    def damage(self, row: dict[str, Any], kind: str) -> None:
        """Break the rendered `row` as a bad row of `kind` (the kinds broken in the source's raw form)."""
        values = {**_COMMON_ROW_VALUES, **self.ROW_VALUES}
        if kind in values:
            field_name, value = values[kind]
            row[field_name] = value
        elif kind == "too_deep_for_storage":
            row["extra"] = too_deep()
