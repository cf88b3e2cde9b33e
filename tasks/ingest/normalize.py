"""Pure normalization of candidate pairs: text, the order-independent pair id, token estimates.

The pair id hashes the normalized history and the *unordered* pair of responses, so the same comparison
from two sources, or with A and B swapped, is one pair (docs/data-model.md#the-pair-id).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import unicodedata
from typing import Any, NamedTuple

import orjson

from common.reasons import AdapterRejection
from schemas.checks import is_valid_utf8
from schemas.pair import CandidatePair

# Chat-template overhead per message and per request, in tokens (generous for Qwen3's template).
_TOKENS_PER_MESSAGE = 8
_TOKENS_PER_REQUEST = 64
_DIGITS = b"0123456789"


def normalize_text(text: str) -> str:
    """NFC, one newline convention, no outer whitespace: the forms a reader cannot tell apart hash alike."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return text.strip()


_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")


@functools.lru_cache(maxsize=4096)
def language_code(raw: str | None) -> str | None:
    """A BCP-47 tag for a source's language value (`en`, `zh-Hant`, a name such as `english`), or None
    when it is unknown (`und`, a programming language, anything langcodes cannot place)."""
    import langcodes

    if not isinstance(raw, str) or not raw.strip():
        return None
    value = raw.strip()
    try:
        if _TAG.fullmatch(value) and langcodes.tag_is_valid(value.replace("_", "-")):
            tag = langcodes.standardize_tag(value.replace("_", "-"))
        else:
            found = langcodes.find(value)
            # find() also matches loosely ("javascript_html_css" -> Javanese): only an exact name counts
            if found.language_name("en").lower() != value.lower():
                return None
            tag = found.to_tag()
    except (LookupError, ValueError):
        return None
    return None if tag in ("und", "") else tag


_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


def split_reasoning_trace(text: str) -> tuple[str, str | None]:
    """(the final answer, the reasoning trace) of an answer that opens with its own `<think>...</think>` (as
    arena rows from reasoning models do); the judge reads final answers only. A trace that never closes
    leaves no answer at all. Text without a leading trace is returned whole."""
    if not text.lstrip().startswith(_THINK_OPEN):
        return text, None
    body = text.lstrip()[len(_THINK_OPEN):]
    trace, closed, answer = body.partition(_THINK_CLOSE)
    return (answer.strip() if closed else ""), trace.strip()


def normalize_pair(pair: CandidatePair) -> CandidatePair:
    pair.history = [
        {"role": str(m.get("role", "")).strip().lower(), "content": normalize_text(str(m.get("content") or ""))}
        for m in pair.history
    ]
    pair.response_a = normalize_text(pair.response_a)
    pair.response_b = normalize_text(pair.response_b)
    for side in ("a", "b"):
        answer, trace = split_reasoning_trace(getattr(pair, f"response_{side}"))
        if trace is not None:  # the canonical pair holds the final answer; the trace stays with the pair
            setattr(pair, f"response_{side}", answer)
            pair.metadata = {**pair.metadata, f"response_{side}_reasoning_trace": trace}
    # One language scheme across sources (BCP-47); the source's own value is kept beside it.
    if isinstance(pair.language, str):
        code = language_code(pair.language)
        if code != pair.language:
            pair.metadata = {**pair.metadata, "language_raw": pair.language}
        pair.language = code
    return pair


def texts_of(pair: CandidatePair) -> list[str]:
    return [m["content"] for m in pair.history] + [pair.response_a, pair.response_b]


def _encoded(text: str) -> tuple[bytes, bool]:
    """UTF-8 bytes of a text, and whether it encodes cleanly (a lone surrogate does not)."""
    try:
        return text.encode("utf-8"), True
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass"), False


def _tokens_of_bytes(data: bytes) -> int:
    digits = len(data) - len(data.translate(None, _DIGITS))
    return math.ceil((len(data) - digits) / 3) + digits


def estimate_text_tokens(text: str) -> int:
    """A conservative token count for a Qwen-family BPE tokenizer, without the tokenizer.

    One token per 3 UTF-8 bytes (English averages about 4 characters a token, a CJK character is 3
    bytes and at most one token), and one token per digit (Qwen splits numbers into digits).
    """
    return _tokens_of_bytes(_encoded(text)[0])


class TextFacts(NamedTuple):
    """What the ingest learns of a pair's texts, encoding each once. Each part's tokens include its messages'
    chat-template tokens: a version's token lengths are these parts, and the judge request adds its own."""

    tokens: int  # estimated judge input tokens: the three parts and the request's template tokens
    valid: bool  # every text valid UTF-8
    size: int  # UTF-8 bytes of every text
    prompt_tokens: int  # the history, every message with its template tokens
    response_a_tokens: int
    response_b_tokens: int


def pair_text_facts(pair: CandidatePair) -> TextFacts:
    """`TextFacts` of a pair."""
    valid, size, parts = True, 0, []
    for text in texts_of(pair):
        data, ok = _encoded(text)
        parts.append(_TOKENS_PER_MESSAGE + _tokens_of_bytes(data))
        valid &= ok
        size += len(data)
    prompt, a, b = sum(parts[:-2]), parts[-2], parts[-1]
    return TextFacts(_TOKENS_PER_REQUEST + prompt + a + b, valid, size, prompt, a, b)


def estimate_request_tokens(texts: list[str]) -> int:
    """Tokens of a judge request made of these message texts (history, then the two responses)."""
    return _TOKENS_PER_REQUEST + sum(_TOKENS_PER_MESSAGE + estimate_text_tokens(t) for t in texts)


def _canonical_json(value: Any) -> bytes:
    """Sorted-key compact JSON bytes; the standard library takes what orjson refuses (lone surrogates,
    deep nesting), and a repr what neither can write (nesting past the interpreter's recursion limit)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    except TypeError:
        pass
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    except (RecursionError, ValueError, TypeError):
        text = json.dumps(_bounded_repr(value))
    return text.encode("utf-8", "surrogatepass")


def _bounded_repr(value: Any, limit: int = 100_000) -> str:
    try:
        return repr(value)[:limit]
    except RecursionError:
        return f"<{type(value).__name__} nested too deep to show>"


def pair_id(history: list[dict[str, str]], response_a: str, response_b: str) -> str:
    """Content hash of the normalized history and the unordered pair of responses (128-bit hex)."""
    canonical = _canonical_json([[[m["role"], m["content"]] for m in history], sorted([response_a, response_b])])
    return hashlib.blake2b(canonical, digest_size=16).hexdigest()


def row_hash(row: Any) -> str:
    """Stable content hash of a raw row (dict or text): the identity of a quarantined row."""
    data = row.encode("utf-8", "surrogatepass") if isinstance(row, str) else _canonical_json(row)
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def to_json(value: Any) -> str:
    """JSON for storage: UTF-8 text, with lone surrogates escaped rather than crashing the writer."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:
        pass
    try:
        return json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)
    except (RecursionError, ValueError, TypeError):
        return json.dumps(_bounded_repr(value), ensure_ascii=True)


def printable(text: str) -> str:
    """The text with lone surrogates escaped, so it can be stored and shown."""
    return text if is_valid_utf8(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def split_shared_history(
    side_a: list[dict[str, str]], side_b: list[dict[str, str]]
) -> tuple[list[dict[str, str]], str, str] | str:
    """The shared history and the two final answers of an arena-style vote, or why there is none.

    Both sides must end with an assistant answer, and agree on every message before it; otherwise a
    judge would see a history that one of the two models never saw.
    """
    if not side_a or not side_b:
        return AdapterRejection.CONVERSATION_EMPTY
    if side_a[-1]["role"] != "assistant" or side_b[-1]["role"] != "assistant":
        return AdapterRejection.CONVERSATION_NOT_ENDING_WITH_ANSWER
    head_a, head_b = side_a[:-1], side_b[:-1]
    if len(head_a) != len(head_b) or any(
        x["role"] != y["role"] or normalize_text(x["content"]) != normalize_text(y["content"])
        for x, y in zip(head_a, head_b)
    ):
        return AdapterRejection.MULTI_TURN_DIVERGENT_HISTORY
    return head_a, side_a[-1]["content"], side_b[-1]["content"]


def last_turn_only(
    side_a: list[dict[str, str]], side_b: list[dict[str, str]]
) -> tuple[list[dict[str, str]], str, str] | str:
    """The final user turn alone as history (the `last_turn` multi-turn policy)."""
    if len(side_a) < 2 or len(side_b) < 2:
        return AdapterRejection.CONVERSATION_EMPTY
    if side_a[-1]["role"] != "assistant" or side_b[-1]["role"] != "assistant":
        return AdapterRejection.CONVERSATION_NOT_ENDING_WITH_ANSWER
    if side_a[-2] != side_b[-2] or side_a[-2]["role"] != "user":
        return AdapterRejection.MULTI_TURN_DIVERGENT_HISTORY
    return [side_a[-2]], side_a[-1]["content"], side_b[-1]["content"]
