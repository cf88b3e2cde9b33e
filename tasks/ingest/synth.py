"""Seeded synthetic HelpSteer3-, arena- and UltraFeedback-shaped rows with planted duplicates, near
duplicates, contamination and bad rows (and, for UltraFeedback, rows whose completions all tie). Tests and
benchmarks use it; the manifest is the ground truth.

Rows are generated in a stream (no 100k-row list in memory); a duplicate copies one of the last
`_WINDOW` good rows.
"""

from __future__ import annotations

import json
import random
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from common.reasons import AdapterRejection, ReadFault, SchemaCheck, ValueFault, column_reason
from tasks.ingest.latent import human_label, latent_quality

Kind = Literal["helpsteer3", "arena", "ultrafeedback"]

_WINDOW = 500
_VOCAB_SIZE = 6000

# Every kind of bad row, with the quarantine reason the pipeline must give it.
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
BAD_KINDS: dict[Kind, dict[str, str]] = {
    "helpsteer3": {
        **BAD_KINDS_COMMON,
        "history_ends_with_assistant": column_reason("history", SchemaCheck.ENDS_WITH_USER_TURN),
        "system_not_first": column_reason("history", SchemaCheck.ROLES_ALLOWED),
        "history_empty": column_reason("history", SchemaCheck.NOT_EMPTY),
        "label_out_of_range": column_reason("overall_preference", SchemaCheck.IN_RANGE.of(-3, 3)),
        "label_not_int": column_reason("overall_preference", SchemaCheck.IS_INT),
        "missing_response": column_reason("response2", SchemaCheck.MISSING),
        "context_not_list": column_reason("context", SchemaCheck.IS_MESSAGE_LIST),
        "surrogate_in_domain": ValueFault.INVALID_UTF8.of("domain"),
        "nan_domain": ValueFault.NOT_FINITE.of("domain"),
        "surrogate_in_metadata": ValueFault.INVALID_UTF8.of("individual_preference"),
    },
    "arena": {
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
    },
    # `partly`: the row still makes its pairs; one completion is quarantined (see `_UltraFeedback.bad`)
    "ultrafeedback": {
        "malformed_json": ReadFault.MALFORMED_JSON,
        "not_an_object": ReadFault.NOT_AN_OBJECT,
        "too_deep_for_parsers": ReadFault.JSON_TOO_DEEP,
        "too_deep_for_storage": ValueFault.JSON_TOO_DEEP,
        "lone_surrogate": ValueFault.INVALID_UTF8.of("completions"),
        "surrogate_in_source": ValueFault.INVALID_UTF8.of("source"),
        "partly_nan_score": AdapterRejection.COMPLETION_NOT_FINITE.of("fine-grained_score"),
        "nan_beside_completions": ValueFault.NOT_FINITE.of("correct_answers"),  # the row's own fault: quarantined
        "too_long": column_reason("utf8_bytes", SchemaCheck.FITS_JUDGE_CONTEXT.prefix),
        "empty_last_user_turn": column_reason("history", SchemaCheck.LAST_USER_TURN_NOT_EMPTY),
        "missing_instruction": column_reason("instruction", SchemaCheck.MISSING),
        "instruction_not_text": column_reason("instruction", SchemaCheck.IS_TEXT),
        "completions_not_list": column_reason("completions", SchemaCheck.IS_LIST),
        "one_completion": AdapterRejection.FEWER_THAN_TWO_COMPLETIONS,
        "identical_responses": SchemaCheck.RESPONSES_DIFFER,
        "partly_empty_completion": AdapterRejection.COMPLETION_RESPONSE_EMPTY,
        "partly_invisible_completion": AdapterRejection.COMPLETION_RESPONSE_EMPTY,
        "partly_score_missing": AdapterRejection.COMPLETION_SCORE_INVALID.of("fine-grained_score"),
        "partly_score_not_numeric": AdapterRejection.COMPLETION_SCORE_INVALID.of("fine-grained_score"),
        "partly_score_out_of_range": AdapterRejection.COMPLETION_SCORE_OUT_OF_RANGE.of("fine-grained_score"),
        "partly_overall_not_numeric": AdapterRejection.COMPLETION_SCORE_INVALID.of("overall_score"),
        "partly_completion_not_object": AdapterRejection.COMPLETION_NOT_AN_OBJECT,
    },
}


_ROW_VALUES: dict[str, tuple[str, Any]] = {
    "label_out_of_range": ("overall_preference", 5),
    "label_not_int": ("overall_preference", "much better"),
    "context_not_list": ("context", "just a string"),
    "bad_winner": ("winner", "model_c"),
    "conversation_not_list": ("conversation_a", "hello"),
    "nan_language": ("language", float("nan")),
    "surrogate_in_language": ("language", "en\ud800"),
    "surrogate_in_domain": ("domain", "stem\udfff"),
    "nan_domain": ("domain", float("nan")),
    "surrogate_in_metadata": ("individual_preference", [{"score": 1, "reasoning": "fine \ud83d"}]),
    "surrogate_in_model": ("model_a", "model-\udc00"),
    "language_not_text": ("language", 5),
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


def _sizes(rng: random.Random, mean_pair_bytes: int) -> tuple[int, int, int]:
    """Bytes of (history, response 1, response 2): lognormal around a median pair size."""
    total = mean_pair_bytes * rng.lognormvariate(0, 0.35)
    return int(total * 0.34), int(total * 0.33 * rng.uniform(0.6, 1.4)), int(total * 0.33 * rng.uniform(0.6, 1.4))


def _part(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "image": None, "mimeType": None}]


class _Generator:
    def __init__(self, kind: Kind, seed: int, pair_bytes: int, eval_prompts: list[str]):
        self.kind = kind
        self.rng = random.Random(seed)
        self.tm = TextMaker(seed)
        self.pair_bytes = pair_bytes
        self.eval_prompts = eval_prompts
        # made-up names in the shape of arena's (family, version, size): the bias audit groups them by family
        self.models = [f"{family}-{v}" for family in ("gpt", "claude", "llama", "gemini", "qwen", "mistral")
                       for v in ("large-2", "small-1")]

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128)))

    # A good row is kept in a neutral form: history, two answers, a label in -3..3 from A's side.
    def good(self, contaminate: int | None = None) -> dict[str, Any]:
        h, r1, r2 = _sizes(self.rng, self.pair_bytes)
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
        a, b, label = (g["b"], g["a"], -g["label"]) if swap else (g["a"], g["b"], g["label"])
        if self.kind == "helpsteer3":
            return {
                "domain": self.rng.choice(["general", "stem", "code", "multilingual"]),
                "language": "english",
                "context": [dict(m) for m in g["history"]],
                "response1": a,
                "response2": b,
                "overall_preference": -label,
                "individual_preference": [{"score": -label, "reasoning": "@Response 1 vs @Response 2."}],
            }
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

    def near(self, g: dict[str, Any], rate: float) -> dict[str, Any]:
        return {
            "history": [dict(m, content=self.tm.edit(m["content"], rate)) for m in g["history"]],
            "a": self.tm.edit(g["a"], rate),
            "b": self.tm.edit(g["b"], rate),
            "label": g["label"],
        }

    def bad(self, kind: str) -> dict[str, Any] | str:
        """One bad row of `kind`: a dict, or raw line text for rows that are not JSON objects."""
        if kind == "malformed_json":
            return '{"context": [{"role": "user", "content": "truncated ' + self.uid()
        if kind == "not_an_object":
            return json.dumps(["not", "an", "object", self.uid()])
        if kind == "too_deep_for_parsers":  # past orjson's and the standard library's nesting limits
            return '{"id": "%s", "context": %s%s}' % (self.uid(), "[" * 5000, "]" * 5000)
        g = self.good()
        if kind == "history_ends_with_assistant":
            g["history"].append({"role": "assistant", "content": "a trailing answer"})
        elif kind == "bad_role" and self.kind == "helpsteer3":
            g["history"].insert(0, {"role": "tool", "content": "tool output"})
        elif kind == "system_not_first":
            g["history"] = [{"role": "user", "content": "hello"}, {"role": "system", "content": "be brief"}] + g["history"]
        elif kind == "empty_response":
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
        elif kind == "history_empty":
            g["history"] = []
        row = self.render(g)
        if kind in _ROW_VALUES:  # a field holding a value of the wrong kind (JSON writes NaN as a literal)
            field_name, value = _ROW_VALUES[kind]
            row[field_name] = value
        elif kind == "missing_response":
            del row["response2"]
        elif kind == "image_part":
            row["conversation_a"][0]["content"].append({"type": "image", "text": None, "image": "img.png", "mimeType": "image/png"})
            row["full_conversation"][0]["user"]["content"].append(
                {"type": "image", "text": None, "image": "img.png", "mimeType": "image/png"}
            )
        elif kind == "bad_role" and self.kind == "arena":  # a user turn with a role no judge template knows
            row["full_conversation"][0]["user"]["role"] = "tool"
            row["conversation_a"][0]["role"] = "tool"
            row["conversation_b"][0]["role"] = "tool"
        elif kind == "answer_missing":
            row["full_conversation"][-1]["model_side_b"] = None
        elif kind == "missing_id":
            del row["id"]
        elif kind == "too_deep_for_storage":  # parses, but deeper than any writer should be asked to go
            deep: Any = "leaf"
            for _ in range(200):
                deep = [deep]
            row["extra"] = deep
        elif kind == "surrogate_in_id":
            row["id"] = "id-\ud800-" + self.uid()
        elif kind == "bad_row_with_surrogate_id":
            row["id"] = "id-\udbff-" + self.uid()
            row["winner"] = "model_c"
        elif kind == "divergent_multi_turn":
            extra = {"role": "user", "content": _part(self.tm.text(200))}
            first = row["full_conversation"][-1]
            row["full_conversation"].append(
                {
                    "user": extra,
                    "model_side_a": {"role": "assistant", "content": _part(self.tm.text(300))},
                    "model_side_b": {"role": "assistant", "content": _part(self.tm.text(300))},
                }
            )
            row["conversation_a"] += [extra, row["full_conversation"][-1]["model_side_a"]]
            row["conversation_b"] += [extra, row["full_conversation"][-1]["model_side_b"]]
            assert first is not None
        return row


class _UltraFeedback(_Generator):
    """UltraFeedback-shaped rows: one instruction, four rated completions. A good row's best completion leads
    one or two others by at least the pairing threshold (1.0) and the rest by less, never tying it, so the
    pairs each row makes are known by construction; a tie row's completions all lie within the threshold."""

    ASPECTS = ("helpfulness", "honesty", "instruction_following", "truthfulness")
    PROMPT_SOURCES = ("evol_instruct", "false_qa", "flan_v2_cot", "sharegpt", "ultrachat", "truthful_qa")
    TIE_RATE = 0.05  # of the good rows

    def __init__(self, kind: Kind, seed: int, pair_bytes: int, eval_prompts: list[str]):
        super().__init__(kind, seed, pair_bytes, eval_prompts)
        self.last_pairs = 0  # the pairs the last bad row still makes

    def good(self, contaminate: int | None = None, tie: bool | None = None) -> dict[str, Any]:
        h, r1, r2 = _sizes(self.rng, self.pair_bytes)
        prompt = self.tm.text(max(40, h))
        if contaminate is not None:
            prompt += "\n\n" + self.eval_prompts[contaminate]
        # the better-rated answers are the truly better ones: the stand-in judges by the same latent quality
        texts = sorted((self.tm.text(n) for n in (r1, r2, (r1 + r2) // 2, self.rng.choice([r1, r2]))),
                       key=latent_quality, reverse=True)
        if tie is None:
            tie = contaminate is None and self.rng.random() < self.TIE_RATE
        best = self.rng.choice([3.0, 3.5, 4.0, 4.25, 4.5, 4.75, 5.0])
        pairs = 0 if tie else self.rng.choice([1, 2])
        below = ([self.rng.choice([0.0, 0.25, 0.5, 0.75]) for _ in range(3)] if tie else
                 [self.rng.choice([0.25, 0.5, 0.75]) for _ in range(3 - pairs)]
                 + [self.rng.choice([1.0, 1.25, 1.5, 2.0]) for _ in range(pairs)])
        ranks = ["best"] + ["worse" if d >= 1.0 else "close" for d in sorted(below)]
        scores = [best] + [best - d for d in sorted(below)]
        completions = [
            {"response": text, "fine": fine, "rank": rank, "model": model, "principle": self.rng.choice(self.ASPECTS),
             "overall": min(10.0, max(1.0, 2 * fine + self.rng.choice([-1.0, -0.5, 0.0, 0.5])))}
            for text, fine, rank, model in zip(texts, scores, ranks, self.rng.sample(self.models, 4))
        ]
        self.rng.shuffle(completions)  # the best is anywhere in the row
        return {"history": [{"role": "user", "content": prompt}], "completions": completions, "pairs": pairs}

    def _completion(self, c: dict[str, Any]) -> dict[str, Any]:
        total = round(4 * c["fine"])  # four integer aspect ratings whose mean is the fine-grained score
        ratings = [total // 4 + (k < total % 4) for k in range(4)]
        return {
            "annotations": {a: {"Rating": str(r), "Rationale": f"Rated {r} for {a.replace('_', ' ')}."}
                            for a, r in zip(self.ASPECTS, ratings)},
            "critique": "The answer addresses the question; some points could be clearer.",
            "custom_system_prompt": f"You are an AI assistant. Answer with {c['principle'].replace('_', ' ')}.",
            "fine-grained_score": c["fine"],
            "model": c["model"],
            "overall_score": c["overall"],
            "principle": c["principle"],
            "response": c["response"],
        }

    def render(self, g: dict[str, Any], swap: bool = False) -> dict[str, Any]:
        completions = g["completions"][::-1] if swap else g["completions"]  # the same comparisons, reordered
        return {
            "source": self.rng.choice(self.PROMPT_SOURCES),
            "instruction": g["history"][0]["content"],
            "models": [c["model"] for c in completions],
            "completions": [self._completion(c) for c in completions],
            "correct_answers": ["None"],
            "incorrect_answers": ["None"],
        }

    def near(self, g: dict[str, Any], rate: float) -> dict[str, Any]:
        return {"history": [dict(m, content=self.tm.edit(m["content"], rate)) for m in g["history"]],
                "completions": [dict(c, response=self.tm.edit(c["response"], rate)) for c in g["completions"]],
                "pairs": g["pairs"]}

    def bad(self, kind: str) -> dict[str, Any] | str:
        """One bad row of `kind`; `last_pairs` is how many valid pairs it still makes."""
        self.last_pairs = 0
        if kind in ("malformed_json", "not_an_object", "too_deep_for_parsers"):
            return super().bad(kind)
        g = self.good(tie=False)
        at = {c["rank"]: k for k, c in enumerate(g["completions"])}  # a position of each rank
        if kind == "too_long":  # every pair is too long for the judge
            g["history"][0]["content"] = self.tm.text(230_000)
        elif kind == "empty_last_user_turn":
            g["history"][0]["content"] = " "
        elif kind == "identical_responses":  # one clearly worse completion says what the best says
            g["completions"][at["worse"]]["response"] = g["completions"][at["best"]]["response"]
            self.last_pairs = g["pairs"] - 1
        row = self.render(g)
        close = row["completions"][at["close"]]  # a completion that makes no pair: the row's pairs survive it
        if kind.startswith("partly_"):
            self.last_pairs = g["pairs"]
        if kind == "too_deep_for_storage":
            deep: Any = "leaf"
            for _ in range(200):
                deep = [deep]
            row["extra"] = deep
        elif kind == "lone_surrogate":
            close["response"] = close["response"][:40] + "\ud800" + close["response"][40:]
        elif kind == "surrogate_in_source":
            row["source"] = "sharegpt\ud800"
        elif kind == "partly_nan_score":
            close["fine-grained_score"] = float("nan")
        elif kind == "nan_beside_completions":
            row["correct_answers"] = [float("nan")]
        elif kind == "missing_instruction":
            del row["instruction"]
        elif kind == "instruction_not_text":
            row["instruction"] = 5
        elif kind == "completions_not_list":
            row["completions"] = "four answers"
        elif kind == "one_completion":
            row["completions"] = row["completions"][:1]
        elif kind == "partly_empty_completion":
            close["response"] = "   \n "
        elif kind == "partly_invisible_completion":
            close["response"] = "\u200b\u200b\ufeff"
        elif kind == "partly_score_missing":
            del close["fine-grained_score"]
        elif kind == "partly_score_not_numeric":
            close["fine-grained_score"] = "N/A"
        elif kind == "partly_score_out_of_range":
            close["fine-grained_score"] = 7.5
        elif kind == "partly_overall_not_numeric":
            close["overall_score"] = "ten"
        elif kind == "partly_completion_not_object":
            row["completions"][at["close"]] = "an answer without its ratings"
        return row


# The kinds `curate synth` writes, each with its generator.
GENERATORS: dict[str, type[_Generator]] = {"helpsteer3": _Generator, "arena": _Generator,
                                           "ultrafeedback": _UltraFeedback}
KINDS: tuple[str, ...] = tuple(GENERATORS)


def synth_lines(
    kind: Kind,
    n: int,
    seed: int = 0,
    *,
    pair_bytes: int = 6000,
    exact_dup_rate: float = 0.03,
    near_dup_rate: float = 0.03,
    bad_rate: float = 0.02,
    contamination_rate: float = 0.0,
    eval_prompts: list[str] | None = None,
    near_edit_range: tuple[float, float] = (0.005, 0.04),
    manifest: SynthManifest | None = None,
) -> Iterator[str]:
    """Yield `n` JSONL lines; fill `manifest` (if given) with what was planted where."""
    gen = GENERATORS[kind](kind, seed, pair_bytes, eval_prompts or [])
    m = manifest if manifest is not None else SynthManifest(kind, seed)
    m.kind, m.seed = kind, seed
    recent: deque[tuple[int, dict[str, Any]]] = deque(maxlen=_WINDOW)
    bad_kinds = list(BAD_KINDS[kind])
    n_bad = 0
    for i in range(n):
        roll = gen.rng.random()
        if roll < bad_rate:
            bad_kind = bad_kinds[n_bad % len(bad_kinds)]
            n_bad += 1
            row = gen.bad(bad_kind)
            m.bad_rows[i] = (bad_kind, BAD_KINDS[kind][bad_kind])
            if isinstance(gen, _UltraFeedback) and gen.last_pairs:
                m.pairs[i] = gen.last_pairs
            yield row if isinstance(row, str) else json.dumps(row)
            continue
        roll -= bad_rate
        if recent and roll < exact_dup_rate:
            j, g = gen.rng.choice(recent)
            m.exact_duplicates.append((i, j))
            _count_pairs(m, i, g)
            yield json.dumps(gen.render(g, swap=gen.rng.random() < 0.5))
            continue
        roll -= exact_dup_rate
        if recent and roll < near_dup_rate:
            j, g = gen.rng.choice(recent)
            rate = gen.rng.uniform(*near_edit_range)
            m.near_duplicates.append((i, j, rate))
            _count_pairs(m, i, g)
            yield json.dumps(gen.render(gen.near(g, rate), swap=gen.rng.random() < 0.5))
            continue
        roll -= near_dup_rate
        contaminate = None
        if gen.eval_prompts and roll < contamination_rate:
            contaminate = gen.rng.randrange(len(gen.eval_prompts))
            m.contaminated.append((i, contaminate))
        g = gen.good(contaminate)
        if len(g["history"]) > 1:
            m.valid_multi_turn.append(i)
        if g.get("pairs") == 0:  # every completion ties: no pair, and nothing a duplicate should copy
            m.no_clear_preference.append(i)
        else:
            _count_pairs(m, i, g)
            recent.append((i, g))
        yield json.dumps(gen.render(g))
    m.rows = n


def _count_pairs(m: SynthManifest, i: int, g: dict[str, Any]) -> None:
    """Row `i` makes the pairs of the neutral row `g` (recorded for the kinds that make several a row)."""
    if "pairs" in g:
        m.pairs[i] = g["pairs"]


def synth_eval_prompts(n: int, seed: int = 1) -> list[str]:
    """Prompts of a made-up evaluation set (for planting contamination)."""
    tm = TextMaker(seed + 10_000)
    rng = random.Random(seed)
    return [tm.text(rng.randint(80, 600)) + "?" for _ in range(n)]


def write_synth(path: Path, kind: Kind, n: int, seed: int = 0, **kwargs: Any) -> SynthManifest:
    """Write `n` rows to `path` (JSONL) and the manifest beside it (`<path>.manifest.json`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    manifest = SynthManifest(kind, seed)
    with path.open("w", encoding="utf-8") as f:
        for line in synth_lines(kind, n, seed, manifest=manifest, **kwargs):
            f.write(line)
            f.write("\n")
    Path(str(path) + ".manifest.json").write_text(manifest.to_json())
    return manifest


def write_eval_set(path: Path, prompts: list[str]) -> None:
    """Write prompts as an RM-Bench-shaped JSONL file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for i, p in enumerate(prompts):
            f.write(json.dumps({"id": i, "prompt": p, "domain": "chat", "chosen": ["c"], "rejected": ["r"]}) + "\n")
