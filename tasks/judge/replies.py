"""What a judge server sent back, read without trusting it: pure functions.

A reply may be any bytes of any shape (a list for a body, a number for `content`, a string for `choices`,
100 MB of text). Each is read into a `Completion` or a `BadResponse` naming what was wrong, so that one
broken reply is one failed judgment, never a crashed run.
"""

from __future__ import annotations

import email.utils
import math
import time
from dataclasses import dataclass
from typing import Any

from common.reasons import JudgeFailure

# Stored raw texts keep their head and tail: enough to see how an answer began and how it ended.
RAW_TEXT_LIMIT = 200_000
_HEAD_SHARE = 0.75


@dataclass(frozen=True, slots=True)
class Completion:
    """The fields of a chat completion the judge uses, each of the type it must have."""

    content: str | None
    reasoning: str | None
    finish_reason: str | None
    tokens_in: int
    tokens_out: int
    model: str | None


@dataclass(frozen=True, slots=True)
class BadResponse:
    """A reply that is not a chat completion: its reason is `bad_response:<what>`, `what` naming the field."""

    reason: str  # JudgeFailure.BAD_RESPONSE filled with the field
    detail: str = ""

    @property
    def what(self) -> str:
        return self.reason.removeprefix(JudgeFailure.BAD_RESPONSE.prefix)


def _text_or_none(value: Any) -> tuple[bool, str | None]:
    return (value is None or isinstance(value, str)), value


def _count(value: Any) -> int | None:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def reasoning_of(message: dict[str, Any]) -> Any:
    """The separate reasoning trace: vLLM says `reasoning` (since late 2025) or `reasoning_content` (before);
    some servers send both, one of them null, so the first that holds text wins."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if value not in (None, ""):
            return value
    return None


def read_completion(body: Any) -> Completion | BadResponse:
    """A parsed JSON body as a completion, or what is wrong with it."""
    if not isinstance(body, dict):
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("body"), f"a JSON {type(body).__name__}, not an object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("choices"), f"{type(choices).__name__}, not a non-empty list")
    choice = choices[0]
    if not isinstance(choice, dict):
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("choice"), f"{type(choice).__name__}, not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("message"), f"{type(message).__name__}, not an object")
    ok, content = _text_or_none(message.get("content"))
    if not ok:
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("content"), f"{type(content).__name__}, not a string")
    ok, reasoning = _text_or_none(reasoning_of(message))
    if not ok:
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("reasoning"), f"{type(reasoning).__name__}, not a string")
    ok, finish = _text_or_none(choice.get("finish_reason"))
    if not ok:
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("finish_reason"), f"{type(finish).__name__}, not a string")
    usage = body.get("usage")
    if usage is None:
        usage = {}
    if not isinstance(usage, dict):
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("usage"), f"{type(usage).__name__}, not an object")
    tokens_in, tokens_out = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    if tokens_in is None or tokens_out is None:
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("usage"),
                           f"token counts {usage.get('prompt_tokens')!r:.40} / "
                           f"{usage.get('completion_tokens')!r:.40} are not counts")
    ok, model = _text_or_none(body.get("model"))
    if not ok:
        return BadResponse(JudgeFailure.BAD_RESPONSE.of("model"), f"{type(model).__name__}, not a string")
    return Completion(content, reasoning, finish, tokens_in, tokens_out, model)


def cap_text(text: str | None, limit: int = RAW_TEXT_LIMIT) -> str | None:
    """`text` whole when short; else its head and tail around a line that says how much was cut."""
    if text is None or len(text) <= limit:
        return text
    head = int(limit * _HEAD_SHARE)
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut: {len(text)} in all, head and tail kept ...]\n{text[-tail:]}"


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A `Retry-After` header's wait in seconds (delta-seconds or an HTTP date), or None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)
