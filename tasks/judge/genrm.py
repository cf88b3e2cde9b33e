"""The GenRM protocol, as pure functions (docs/genrm-protocol.md).

A request is the history (user/assistant turns, the last one a user turn) followed by the two candidates
in the custom roles `response_1` and `response_2`. The answer is a reasoning trace, `</think>`, then a
JSON object `{"score_1": 1-5, "score_2": 1-5, "ranking": 1-6}`. Ranking 1 means response 1 is much better,
6 that response 2 is much better. Order `ab` shows response A first; `ba` shows B first, and its ranking
maps back to A's side as `7 - ranking`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from common.reasons import JudgeFailure

ORDERS = ("ab", "ba")
THINK_END = "</think>"
_DECODER = json.JSONDecoder()
_KEYS = ("score_1", "score_2", "ranking")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A parsed answer, in the order it was shown."""

    score_1: int
    score_2: int
    ranking: int


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """Why an answer gave no verdict: a failed judgment, never a default score."""

    reason: str  # empty | truncated | no_answer_after_reasoning | no_json | not_a_number | out_of_range
    detail: str = ""


_MIDDLE = 3.5  # between rankings 3 (A slightly better) and 4 (B slightly better): a margin's zero


def margin_of_ranking(ranking_a: int) -> float:
    """A ranking on A's side as a signed margin: +2.5 (1, A much better) ... -2.5 (6, B much better)."""
    return _MIDDLE - ranking_a


def ranking_of_margin(margin: float) -> int:
    """The ranking on A's side that `margin` was made from (`margin_of_ranking` undone)."""
    return int(round(_MIDDLE - margin))


def mirrored_ranking(ranking: int) -> int:
    """A ranking seen from the other response: 1 (response 1 much better) becomes 6, and so on."""
    return 7 - ranking


MAX_MARGIN = margin_of_ranking(1)  # the largest |margin|: 2.5


@dataclass(frozen=True, slots=True)
class SideVerdict:
    """A verdict mapped to response A's side."""

    score_a: int
    score_b: int
    ranking_a: int  # 1 = A much better ... 6 = B much better
    margin: float  # margin_of_ranking(ranking_a): +2.5 (A much better) ... -2.5 (B much better)

    @classmethod
    def of_margin(cls, score_a: int, score_b: int, margin: float) -> SideVerdict:
        """The verdict a stored margin (and scores) stands for: its ranking derived from the margin."""
        return cls(score_a, score_b, ranking_of_margin(margin), margin)


def build_messages(history: list[dict[str, str]], response_a: str, response_b: str, order: str) -> list[dict[str, str]]:
    """The chat messages for one judgment in order `ab` or `ba`."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    if not history or history[-1]["role"] != "user":
        raise ValueError("the history must end with a user turn")
    first, second = (response_a, response_b) if order == "ab" else (response_b, response_a)
    return [{"role": m["role"], "content": m["content"]} for m in history] + [
        {"role": "response_1", "content": first},
        {"role": "response_2", "content": second},
    ]


def answer_text(content: str | None, reasoning: str | None = None) -> str | None:
    """The part of the output that holds the answer, or None when the reasoning never ended.

    The GenRM's chat template opens `<think>` in the prompt, so a finished completion holds the trace, the
    closing `</think>` and the answer: the answer is the text after the last `</think>`. With vLLM's
    reasoning parser on, the trace comes in its own field and the content is the answer. Content with no
    `</think>` and no separate trace never finished reasoning: any JSON in it is a draft, not a verdict.
    """
    content = content or ""
    if THINK_END in content:
        return content.rsplit(THINK_END, 1)[1]
    if (reasoning or "").strip() and content.strip():
        return content
    return None


def split_trace(content: str | None, reasoning: str | None) -> tuple[str | None, str | None]:
    """(answer text, reasoning trace) as stored: the same with vLLM's reasoning parser on (the trace in its own
    field) or off (the trace in the content, up to the last `</think>`), so a verdict's trace is always found in
    one place. Content that never closed its reasoning is kept whole."""
    if reasoning or not content or THINK_END not in content:
        return content, reasoning
    trace, answer = content.rsplit(THINK_END, 1)
    return answer, trace


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+(\.0+)?\s*", value):
        return int(float(value))
    return None


# A verdict is a small flat object: found in one linear pass. Nested verdicts are still accepted, through a
# bounded fallback, so no answer (2 MB of unclosed braces, JSON nested thousands deep) costs more than
# a few milliseconds or blows Python's recursion limit.
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}")
_FALLBACK_STARTS = 64  # the last `{` positions tried by the nested fallback
_FALLBACK_WINDOW = 8192  # characters a nested verdict may span


def _verdict_object(candidate: str) -> dict[str, Any] | None:
    try:
        obj, _ = _DECODER.raw_decode(candidate)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) and all(k in obj for k in _KEYS) else None


def _last_verdict_object(text: str) -> dict[str, Any] | None:
    """The last JSON object in `text` that has the three verdict keys (fences and prose around it ignored)."""
    for match in reversed(list(_FLAT_OBJECT.finditer(text))):
        if '"ranking"' in match.group() and (obj := _verdict_object(match.group())) is not None:
            return obj
    tail = text[-_FALLBACK_WINDOW * 4:]
    for start in [m.start() for m in re.finditer(r"\{", tail)][-_FALLBACK_STARTS:][::-1]:
        if (obj := _verdict_object(tail[start:start + _FALLBACK_WINDOW])) is not None:
            return obj
    return None


def parse_completion(content: str | None, finish_reason: str | None = None, reasoning: str | None = None) -> Verdict | ParseFailure:
    """A completion's verdict, or why there is none."""
    if finish_reason == "length":
        return ParseFailure(JudgeFailure.TRUNCATED, "cut off at max_tokens before a complete answer")
    if not (content or "").strip() and not (reasoning or "").strip():
        return ParseFailure(JudgeFailure.EMPTY)
    answer = answer_text(content, reasoning)
    if answer is None:
        return ParseFailure(JudgeFailure.NO_ANSWER_AFTER_REASONING, "the reasoning never reached </think>")
    obj = _last_verdict_object(answer)
    if obj is None:
        return ParseFailure(JudgeFailure.NO_JSON, answer.strip()[-200:])
    values = [_as_int(obj[k]) for k in _KEYS]
    if any(v is None for v in values):
        return ParseFailure(JudgeFailure.NOT_A_NUMBER, json.dumps({k: obj[k] for k in _KEYS})[:200])
    s1, s2, rank = values
    if not (1 <= s1 <= 5 and 1 <= s2 <= 5 and 1 <= rank <= 6):
        return ParseFailure(JudgeFailure.OUT_OF_RANGE, f"score_1={s1} score_2={s2} ranking={rank}")
    return Verdict(s1, s2, rank)


def to_a_side(verdict: Verdict, order: str) -> SideVerdict:
    """Map a verdict given in `order` to response A's side."""
    if order == "ab":
        score_a, score_b, ranking_a = verdict.score_1, verdict.score_2, verdict.ranking
    elif order == "ba":
        score_a, score_b, ranking_a = verdict.score_2, verdict.score_1, mirrored_ranking(verdict.ranking)
    else:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    return SideVerdict(score_a, score_b, ranking_a, margin_of_ranking(ranking_a))


def scores_agree(side: SideVerdict) -> bool:
    """Whether the individual scores point the same way as the ranking (a tie in scores agrees with any)."""
    if side.score_a == side.score_b:
        return True
    return (side.score_a > side.score_b) == (side.margin > 0)
