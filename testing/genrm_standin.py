"""GenRM stand-in: an OpenAI-compatible server that answers like Qwen3-Nemotron-235B-A22B-GenRM, simulated.

Tests, the demo and benchmarks use it in place of the real 235B judge (docs/genrm-protocol.md). Its verdicts are
**SIMULATED**: each response text gets a latent quality from a hash of its text, so a verdict is a pure
function of the request content, while latency, capacity (requests served at once; the rest queue) and
faults (500, hang, malformed, truncated) behave like a busy vLLM server. Nothing here judges anything.

Run: `python -m testing.genrm_standin --port 8000`, or `with StandinProcess(config) as judge: ...judge.url`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import random
import socket
import sys
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, Iterable, NamedTuple

import orjson
import uvicorn
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from common.settings import JUDGE_MAX_MODEL_LEN, JUDGE_MODEL
from tasks.ingest.latent import latent_quality
from tasks.judge.server import ManagedServer

REAL_MODEL = JUDGE_MODEL
DEFAULT_MODEL = f"SIMULATED-GenRM-standin (not {REAL_MODEL})"
# What /v1/models says the stand-in loaded (vLLM's `root`): no weights, and SIMULATED whatever name it is served
# under, so that the judge's check marks its verdicts simulated even when it answers as the real model.
ROOT = "SIMULATED: testing/genrm_standin.py, no weights"
FAULT_KINDS = ("error", "hang", "malformed", "truncated", "unclosed")

# Maps a quality difference (latent qualities lie in [0, 5)) to ranking units: the difference of two
# uniform qualities then lands in each of the six rankings about equally often.
RANKING_SCALE = 1.2
# Half-width of the per-sample noise, in quality units: a different `seed` moves a ranking by at most one.
NOISE = 0.4
_DISCLAIMER = "SIMULATED reasoning by the GenRM stand-in: no model read these responses."
_FILLER = (
    "the user asked for a clear answer so compare accuracy helpfulness and completeness of both responses "
    "response one covers the main point while response two adds detail check correctness of each claim "
    "consider tone length formatting and whether instructions were followed weigh errors more than style"
).split()


@dataclass(frozen=True)
class StandinConfig:
    capacity: int = 64  # requests served at once; the rest wait for a slot
    latency_mean: float = 0.05  # seconds of service time, lognormal
    latency_sigma: float = 0.5
    position_bias: float = 0.0  # ranking units credited to the response shown first
    # ranking units credited to the longer response per unit of log length ratio (a verbosity bias)
    length_bias: float = 0.0
    error_rate: float = 0.0  # HTTP 500
    hang_rate: float = 0.0  # no answer until the client gives up
    malformed_rate: float = 0.0  # 200 OK without a parseable verdict after </think>
    truncated_rate: float = 0.0  # 200 OK cut off inside the reasoning, finish_reason "length"
    unclosed_rate: float = 0.0  # 200 OK, "stop", a verdict-shaped draft but the reasoning never closed
    seed: int = 0  # seeds the fault stream only: verdicts and latencies come from the request content
    model: str = DEFAULT_MODEL
    reasoning_words: int = 60
    hang_seconds: float = 3600.0
    # Checking an evaluation's plumbing: a JSONL file of {"prompt", "better", "worse"} makes the stand-in
    # rank by those labels (an oracle), and `first_wins_rate` of verdicts then go to the first-shown answer.
    oracle: str = ""
    first_wins_rate: float = 0.0
    # The served context, as vLLM's --max-model-len: /v1/models reports it, and a request whose prompt plus
    # max_tokens exceeds it is refused with vLLM's 400.
    max_model_len: int = JUDGE_MAX_MODEL_LEN
    # Render the prompt as the base Qwen3 thinking template does, which silently drops the custom roles
    # response_1 and response_2 (a misconfigured server): for the preflight's refusal.
    drop_response_roles: bool = False

    def __post_init__(self) -> None:
        rates = [self.error_rate, self.hang_rate, self.malformed_rate, self.truncated_rate, self.unclosed_rate]
        if any(not 0.0 <= r <= 1.0 for r in rates) or sum(rates) > 1.0 + 1e-9:
            raise ValueError(f"fault rates must lie in [0, 1] and sum to at most 1, got {rates}")
        if self.capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {self.capacity}")
        if min(self.latency_mean, self.latency_sigma, self.position_bias, self.length_bias, self.hang_seconds) < 0:
            raise ValueError("latency_mean, latency_sigma, position_bias, length_bias and hang_seconds must be >= 0")
        if not 0.0 <= self.first_wins_rate <= 1.0:
            raise ValueError(f"first_wins_rate must lie in [0, 1], got {self.first_wins_rate}")
        if self.reasoning_words < 0:
            raise ValueError(f"reasoning_words must be >= 0, got {self.reasoning_words}")


class Verdict(NamedTuple):
    score_1: int
    score_2: int
    ranking: int


class InvalidRequest(ValueError):
    """Bad input: answered with HTTP 400, never a 500."""


@dataclass(frozen=True)
class ChatRequest:
    messages: list[dict[str, str]]  # only role and content are kept
    seed: int | None
    max_tokens: int | None


# ---------------------------------------------------------------- pure logic


def _hash64(*parts: object) -> int:
    """A stable 64-bit hash of the given parts (blake2b, not Python's per-process salted hash)."""
    return int.from_bytes(hashlib.blake2b(orjson.dumps(parts), digest_size=8).digest(), "big")


def _unit(*parts: object) -> float:
    """A stable uniform draw in [0, 1) from the given parts."""
    return _hash64(*parts) / 2.0**64


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: str
    content: str


class ChatCompletionRequest(BaseModel):
    """The part of an OpenAI chat-completions body the stand-in reads, checked as a GenRM request."""

    model_config = ConfigDict(extra="ignore")
    messages: list[_Message]
    seed: StrictInt | None = None
    max_tokens: StrictInt | None = Field(None, ge=1)
    max_completion_tokens: StrictInt | None = Field(None, ge=1)
    temperature: StrictFloat | StrictInt | None = Field(None, ge=0.0, le=2.0)
    top_p: StrictFloat | StrictInt | None = Field(None, gt=0.0, le=1.0)
    stream: bool = False
    n: int = 1

    @field_validator("messages")
    @classmethod
    def genrm_layout(cls, messages: list[_Message]) -> list[_Message]:
        """[system], user/assistant history ending with a user turn, then response_1 and response_2."""
        if not messages:
            raise ValueError("'messages' must be a non-empty list")
        roles = [m.role for m in messages]
        if roles[-2:] != ["response_1", "response_2"] or roles.count("response_1") + roles.count("response_2") != 2:
            raise ValueError("the last two messages must be exactly one 'response_1' then one 'response_2'")
        history = roles[:-2]
        if history[:1] == ["system"]:
            history = history[1:]
        if not history:
            raise ValueError("a history with at least one 'user' turn must precede the responses")
        bad = sorted({r for r in history if r not in ("user", "assistant")})
        if bad:
            raise ValueError(f"history roles must be 'user' or 'assistant' (one leading 'system'), got {bad}")
        if history[-1] != "user":
            raise ValueError("the last history turn must be a 'user' turn")
        return messages

    @model_validator(mode="after")
    def one_plain_answer(self) -> ChatCompletionRequest:
        if self.stream:
            raise ValueError("the stand-in does not stream: send 'stream': false")
        if self.n != 1:
            raise ValueError("the stand-in returns one choice: 'n' must be 1")
        return self


def parse_chat_request(raw: bytes) -> ChatRequest:
    """Validate a chat-completions body; raises InvalidRequest with a message for the client."""
    try:
        body = ChatCompletionRequest.model_validate_json(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InvalidRequest(f"{where + ': ' if where else ''}{first['msg'].removeprefix('Value error, ')}") from None
    return ChatRequest([{"role": m.role, "content": m.content} for m in body.messages], body.seed,
                       body.max_completion_tokens or body.max_tokens)


def quality(text: str) -> float:
    """The latent quality of a response, uniform in [0, 5): the one synthetic human labels follow too."""
    return latent_quality(text)


def oracle_key(prompt: str, response: str) -> str:
    return hashlib.blake2b(f"{prompt}\0{response}".encode(), digest_size=16).hexdigest()


def load_oracle(path: str) -> dict[str, float]:
    """Latent qualities that follow known labels: the better answer of a prompt 4.9, the worse 0.1."""
    table: dict[str, float] = {}
    if not path:
        return table
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                table[oracle_key(row["prompt"], row["worse"])] = 0.1
                table[oracle_key(row["prompt"], row["better"])] = 4.9
    return table


def verdict_for(messages: list[dict[str, str]], seed: int | None, config: StandinConfig,
                oracle: dict[str, float] | None = None) -> Verdict:
    """The simulated verdict for a validated request.

    The sample noise is drawn for the unordered pair and changes sign with the order, so with no position
    bias the swapped request gets exactly the mirrored verdict (7 - ranking, scores swapped); only
    identical responses cannot mirror. With an oracle, labelled answers take the oracle's qualities; with
    `first_wins_rate`, that share of requests (drawn from the content) ranks the first-shown answer best.
    """
    text_1, text_2 = messages[-2]["content"], messages[-1]["content"]
    if config.first_wins_rate and _unit("first-wins", messages, seed) < config.first_wins_rate:
        return Verdict(5, 1, 1)
    prompt = messages[-3]["content"] if len(messages) >= 3 else ""
    q1 = (oracle or {}).get(oracle_key(prompt, text_1)) if oracle else None
    q2 = (oracle or {}).get(oracle_key(prompt, text_2)) if oracle else None
    q1 = quality(text_1) if q1 is None else q1
    q2 = quality(text_2) if q2 is None else q2
    sign = 1.0 if text_1 <= text_2 else -1.0
    noise = sign * NOISE * (2.0 * _unit("noise", sorted([text_1, text_2]), seed) - 1.0)
    raw = 3.5 - RANKING_SCALE * (q1 - q2 + noise) - config.position_bias \
        - config.length_bias * math.log(max(len(text_1), 1) / max(len(text_2), 1))
    ranking = min(6, max(1, math.floor(raw + 0.5)))
    s1, s2 = min(5, 1 + math.floor(q1)), min(5, 1 + math.floor(q2))
    # Noise or bias can flip the ranking against the qualities: tie the scores rather than contradict it.
    if ranking <= 3 and s1 < s2:
        s1 = s2
    elif ranking >= 4 and s2 < s1:
        s2 = s1
    return Verdict(s1, s2, ranking)


def latency_for(messages: list[dict[str, str]], seed: int | None, config: StandinConfig) -> float:
    """Service seconds for a request: lognormal with the configured mean, drawn from the request content."""
    if config.latency_mean <= 0:
        return 0.0
    sigma = config.latency_sigma
    mu = math.log(config.latency_mean) - sigma**2 / 2
    u = min(max(_unit("latency", messages, seed), 1e-12), 1 - 1e-12)  # inv_cdf needs the open interval
    return math.exp(mu + sigma * NormalDist().inv_cdf(u))


def draw_fault(rng: random.Random, config: StandinConfig) -> str | None:
    """One draw per request from the fault stream (not the content, so a retry can succeed)."""
    u = rng.random()
    for kind in FAULT_KINDS:
        u -= getattr(config, f"{kind}_rate")
        if u < 0:
            return kind
    return None


def reasoning_for(messages: list[dict[str, str]], seed: int | None, words: int) -> str:
    """Filler reasoning after a disclaimer; never contains JSON or </think>."""
    rng = random.Random(_hash64("reasoning", messages, seed))
    return " ".join([_DISCLAIMER, *rng.choices(_FILLER, k=words)])


def _malformed_answer(verdict: Verdict, variant: int) -> tuple[str, str]:
    """(extra reasoning, answer) pairs that a strict GenRM parser must reject."""
    s1, s2, r = verdict
    good = json.dumps(verdict._asdict())
    return [
        ("", f"Response {1 if r <= 3 else 2} is better overall."),  # prose, no JSON
        ("", json.dumps({"score_1": s1, "score_2": s2})),  # a key missing
        ("", json.dumps({"score_1": s1, "score_2": s2, "ranking": 9})),  # out of range
        ("", good[: len(good) // 2]),  # broken JSON
        (f" Draft verdict: {good}", ""),  # the verdict only inside the reasoning
    ][variant]


def completion_for(request: ChatRequest, config: StandinConfig, fault: str | None,
                   oracle: dict[str, float] | None = None) -> tuple[str, str]:
    """(content, finish_reason) for a served request; `fault` is None, 'malformed', 'truncated' or 'unclosed'.

    Like the GenRM, whose chat template opens `<think>` inside the prompt, the content holds the trace
    and the closing `</think>` only, then the answer."""
    messages, seed = request.messages, request.seed
    reasoning = reasoning_for(messages, seed, config.reasoning_words)
    verdict = verdict_for(messages, seed, config, oracle)
    if fault == "truncated":
        return reasoning[: max(1, len(reasoning) // 2)], "length"
    if fault == "unclosed":  # stopped while still reasoning: the JSON is a draft, not a verdict
        return f"{reasoning} Draft so far: {json.dumps(verdict._asdict())} but let me check again", "stop"
    if fault == "malformed":
        extra, answer = _malformed_answer(verdict, math.floor(5 * _unit("malformed", messages, seed)))
        text = f"{reasoning}{extra}\n</think>\n{answer}"
    else:
        text = f"{reasoning}\n</think>\n{json.dumps(verdict._asdict())}"
    # Like vLLM: an output longer than max_tokens is cut there, wherever that falls.
    if request.max_tokens is not None and len(text) // 4 > request.max_tokens:
        return text[: request.max_tokens * 4], "length"
    return text, "stop"


def token_estimate(text_length: int) -> int:
    return max(1, text_length // 4)


# A GenRM-style chat template (the stand-in renders the custom roles like the real one) and a reversible toy
# tokenizer (four UTF-8 bytes a token), so that /tokenize counts a prompt exactly as a chat request is counted.
_TOKEN_BYTES = 4


def render_prompt(messages: list[dict[str, str]], drop_response_roles: bool = False) -> str:
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages
                    if not (drop_response_roles and m["role"] in ("response_1", "response_2")))
    return turns + "<|im_start|>assistant\n<think>\n"


def tokenize(text: str) -> list[int]:
    data = text.encode("utf-8", "surrogatepass")
    return [int.from_bytes(data[i:i + _TOKEN_BYTES], "big") for i in range(0, len(data), _TOKEN_BYTES)]


def detokenize(tokens: list[int]) -> str:
    data = b"".join(t.to_bytes(_TOKEN_BYTES, "big").lstrip(b"\0") if i == len(tokens) - 1 else
                    t.to_bytes(_TOKEN_BYTES, "big") for i, t in enumerate(tokens))
    return data.decode("utf-8", "replace")


def queue_over_window(log: list[tuple[float, int]], start: float, end: float) -> tuple[float, int]:
    """(time-weighted mean, max) of a step function given as (time, value) changes, over [start, end]."""
    if end <= start or not log:
        return 0.0, 0
    area, peak = 0.0, 0
    for i, (t, v) in enumerate(log):
        t_next = log[i + 1][0] if i + 1 < len(log) else end
        lo, hi = max(t, start), min(t_next, end)
        if hi > lo:
            area += v * (hi - lo)
        if t <= end and t_next >= start:
            peak = max(peak, v)
    return area / (end - start), peak


def busy_fraction(
    intervals: Iterable[tuple[float, float | None]], start: float, end: float, capacity: int, now: float
) -> tuple[float, float]:
    """(busy slot-seconds, their fraction of capacity x window) over [start, end].

    An interval whose end is None is still in service and counts until `now`.
    """
    if end <= start:
        return 0.0, 0.0
    busy = 0.0
    for s, e in intervals:
        busy += max(0.0, min(end, now if e is None else e) - max(start, s))
    return busy, busy / (capacity * (end - start))


# ---------------------------------------------------------------- server


def _json(payload: Any, status: int = 200) -> Response:
    # orjson rather than JSONResponse: the stand-in must not be the bottleneck of a benchmark.
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json")


def _error(status: int, message: str, kind: str) -> Response:
    return _json({"error": {"message": message, "type": kind, "code": status}}, status)


async def _until_disconnect(request: Request) -> None:
    # The body is read, so the next ASGI message is the client going away.
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _hold(request: Request, seconds: float, closing: asyncio.Future) -> bool:
    """Spend `seconds` serving; False when the client left (vLLM aborts such requests too) or the server
    is shutting down first."""
    if seconds <= 0:
        return True
    watcher = asyncio.ensure_future(_until_disconnect(request))
    try:
        done, _ = await asyncio.wait({watcher, closing}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        return not done
    finally:
        watcher.cancel()


class _Server:
    """Counters, slots and the fault stream of one running stand-in (single event loop: no locks)."""

    def __init__(self, config: StandinConfig):
        self.config = config
        self.slots = asyncio.Semaphore(config.capacity)
        self.faults_rng = random.Random(config.seed)
        self.oracle = load_oracle(config.oracle)
        self.started_at = int(time.time())
        self.in_flight = 0
        self.queued = 0
        self.intervals: list[list] = []  # [service start, end or None while in service], wall clock
        self._closing: asyncio.Future | None = None  # shared by every held request; made on the loop
        self.reset()

    @property
    def closing(self) -> asyncio.Future:
        if self._closing is None:
            self._closing = asyncio.get_running_loop().create_future()
        return self._closing

    def close(self) -> None:
        """Release held requests now, rather than letting uvicorn cancel them mid-await at shutdown."""
        if not self.closing.done():
            self.closing.set_result(None)

    def reset(self) -> None:
        now = time.time()
        self.requests = 0
        self.completed = 0
        self.by_status: dict[str, int] = {}
        self.faults = dict.fromkeys(FAULT_KINDS, 0)
        self.first_request_at: float | None = None
        self.last_request_at: float | None = None
        # A seeded request sent twice can only reproduce the same sample: count any such repeat.
        self.seeded: set[int] = set()
        self.seeded_repeats = 0
        self.tokenize_requests = 0
        self.peak_open = self.queued + self.in_flight  # most requests open at once (queued or in service)
        self.queue_log: list[tuple[float, int]] = [(now, self.queued)]  # (time, requests waiting) at each change
        # Requests still in service keep their (shared, mutable) interval, now starting at the reset.
        self.intervals = [iv for iv in self.intervals if iv[1] is None]
        for iv in self.intervals:
            iv[0] = now

    async def serve_in_slot(self, request: Request, seconds: float) -> bool:
        self.queued += 1
        self.queue_log.append((time.time(), self.queued))
        self.peak_open = max(self.peak_open, self.queued + self.in_flight)
        try:
            await self.slots.acquire()
        finally:
            self.queued -= 1
            self.queue_log.append((time.time(), self.queued))
        interval: list = [time.time(), None]
        self.intervals.append(interval)
        self.in_flight += 1
        try:
            return await _hold(request, seconds, self.closing)
        finally:
            interval[1] = time.time()
            self.in_flight -= 1
            self.slots.release()

    async def chat_completions(self, request: Request) -> Response:
        now = time.time()
        self.requests += 1
        self.first_request_at = self.first_request_at or now
        self.last_request_at = now
        status = 499  # the client went away (or shutdown cancelled the request)
        try:
            response = await self._complete(request)
            status = response.status_code
            return response
        finally:
            self.completed += 1
            self.by_status[str(status)] = self.by_status.get(str(status), 0) + 1

    async def _complete(self, request: Request) -> Response:
        config = self.config
        try:
            chat = parse_chat_request(await request.body())
        except InvalidRequest as exc:
            return _error(400, str(exc), "invalid_request_error")
        prompt_tokens = len(tokenize(render_prompt(chat.messages, config.drop_response_roles)))
        if prompt_tokens + (chat.max_tokens or 0) > config.max_model_len:  # vLLM's own refusal, before any work
            return _error(400, f"This model's maximum context length is {config.max_model_len} tokens. However, "
                               f"you requested {prompt_tokens + (chat.max_tokens or 0)} tokens ({prompt_tokens} in "
                               f"the messages, {chat.max_tokens or 0} in the completion).", "BadRequestError")
        if chat.seed is not None:
            key = _hash64("seeded", chat.messages, chat.seed)
            self.seeded_repeats += key in self.seeded
            self.seeded.add(key)
        fault = draw_fault(self.faults_rng, config)
        if fault:
            self.faults[fault] += 1
        if fault == "error":
            return _error(500, "SIMULATED internal error (GenRM stand-in fault injection)", "internal_server_error")
        seconds = config.hang_seconds if fault == "hang" else latency_for(chat.messages, chat.seed, config)
        if not await self.serve_in_slot(request, seconds):
            if self.closing.done():
                return _error(503, "SIMULATED stand-in shutting down", "service_unavailable")
            return Response(status_code=499)  # nobody is listening
        if fault == "hang":
            return _error(504, f"SIMULATED hang: no answer for {seconds} s", "timeout_error")
        text, finish = completion_for(chat, config, fault, self.oracle)
        completion_tokens = token_estimate(len(text))
        return _json({
            "id": f"chatcmpl-standin-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": config.model,
            "system_fingerprint": "SIMULATED-genrm-standin",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        })

    async def health(self, request: Request) -> Response:
        return _json({"status": "ok", "simulated": True, "model": self.config.model})

    async def models(self, request: Request) -> Response:
        model = {"id": self.config.model, "object": "model", "created": self.started_at, "owned_by": "standin",
                 "root": ROOT, "max_model_len": self.config.max_model_len}
        return _json({"object": "list", "data": [model]})

    async def tokenize(self, request: Request) -> Response:
        """vLLM's POST /tokenize with `messages`: the prompt a chat request renders, counted as it is counted."""
        try:
            body = json.loads(await request.body())
            messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in body["messages"]]
        except (ValueError, KeyError, TypeError):
            return _error(400, "'messages' must be a list of {role, content}", "invalid_request_error")
        self.tokenize_requests += 1
        tokens = tokenize(render_prompt(messages, self.config.drop_response_roles))
        return _json({"count": len(tokens), "max_model_len": self.config.max_model_len, "tokens": tokens})

    async def detokenize(self, request: Request) -> Response:
        try:
            tokens = [int(t) for t in json.loads(await request.body())["tokens"]]
            return _json({"prompt": detokenize(tokens)})
        except (ValueError, KeyError, TypeError, OverflowError):
            return _error(400, "'tokens' must be a list of token ids", "invalid_request_error")

    async def stats(self, request: Request) -> Response:
        """Counters since start or reset, and slot use over a window (default: first request to now).

        `requests` counts chat requests received, `completed` those answered with any status (499: the
        client left first); `in_flight` hold a slot, `queued` wait for one. `busy_fraction` is slot-busy
        seconds over capacity x window, from the recorded service intervals clipped to the window.
        """
        now = time.time()
        try:
            start = float(request.query_params.get("start", self.first_request_at or now))
            end = float(request.query_params.get("end", now))
        except ValueError:
            return _error(400, "'start' and 'end' must be unix seconds", "invalid_request_error")
        busy, fraction = busy_fraction(self.intervals, start, end, self.config.capacity, now)
        waiting_mean, waiting_max = queue_over_window(self.queue_log, start, end)
        return _json({
            "simulated": True,
            "model": self.config.model,
            "capacity": self.config.capacity,
            "requests": self.requests,
            "completed": self.completed,
            "in_flight": self.in_flight,
            "queued": self.queued,
            "peak_open": self.peak_open,
            "by_status": self.by_status,
            "faults": self.faults,
            "seeded_requests": len(self.seeded),
            "seeded_repeats": self.seeded_repeats,
            "tokenize_requests": self.tokenize_requests,
            "window": {"start": start, "end": end},
            "busy_seconds": busy,
            "busy_fraction": fraction,
            "waiting_mean": waiting_mean,  # requests waiting for a slot, time-weighted over the window
            "waiting_max": waiting_max,
            "first_request_at": self.first_request_at,
            "last_request_at": self.last_request_at,
            "now": now,
        })

    async def metrics(self, request: Request) -> Response:
        """vLLM's two scheduler gauges, in Prometheus text format, so that clients can size their batches."""
        label = f'model_name="{self.config.model}"'
        body = (
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            f"vllm:num_requests_running{{{label}}} {float(self.in_flight)}\n"
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
            "# TYPE vllm:num_requests_waiting gauge\n"
            f"vllm:num_requests_waiting{{{label}}} {float(self.queued)}\n"
        )
        return Response(body, media_type="text/plain; version=0.0.4")

    async def reset_stats(self, request: Request) -> Response:
        self.reset()
        return _json({"status": "reset", "simulated": True})


async def _client_gone(request: Request, exc: Exception) -> Response:
    """A client that went away mid-request (a command killed while it sent) ends its request without a server
    traceback: the stand-in's stderr is read by people watching a test fail."""
    return Response(status_code=499)


# What every stand-in's app is made with beside its routes
QUIET_ON_DISCONNECT = {ClientDisconnect: _client_gone}


def server_routes(server: _Server) -> list[Route]:
    """What every stand-in serves beside its judging endpoint: models, the tokenizer, health, counters, gauges."""
    return [
        Route("/v1/models", server.models, methods=["GET"]),
        Route("/tokenize", server.tokenize, methods=["POST"]),
        Route("/detokenize", server.detokenize, methods=["POST"]),
        Route("/health", server.health, methods=["GET"]),
        Route("/stats", server.stats, methods=["GET"]),
        Route("/stats/reset", server.reset_stats, methods=["POST"]),
        Route("/metrics", server.metrics, methods=["GET"]),
    ]


def create_app(config: StandinConfig | None = None) -> Starlette:
    server = _Server(config or StandinConfig())
    app = Starlette(routes=[Route("/v1/chat/completions", server.chat_completions, methods=["POST"]),
                            *server_routes(server)], exception_handlers=QUIET_ON_DISCONNECT)
    app.state.standin = server
    return app


class _Uvicorn(uvicorn.Server):
    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.config.app.state.standin.close()
        await super().shutdown(sockets)


def banner(config: StandinConfig, host: str, port: int) -> str:
    return (
        f"GenRM STAND-IN on http://{host}:{port} — verdicts are SIMULATED, not from {REAL_MODEL}\n"
        f"stand-in config: {orjson.dumps(asdict(config)).decode()}"
    )


def serve(config: StandinConfig | None = None, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve until interrupted (blocking). Requests still held at shutdown get a 503 at once."""
    config = config or StandinConfig()
    print(banner(config, host, port), file=sys.stderr, flush=True)
    # One worker: counters, slots and the fault stream live in this process. The graceful timeout only
    # backs up close(), which ends held requests at once.
    settings = uvicorn.Config(
        create_app(config), host=host, port=port, log_level="warning", access_log=False,
        timeout_graceful_shutdown=2,
    )
    _Uvicorn(settings).run()


def main(argv: list[str] | None = None) -> None:
    """`python -m testing.genrm_standin --port N [--config JSON]`: how a launcher starts it (people use
    `curate judge-standin`, which takes every knob as a flag)."""
    parser = argparse.ArgumentParser(description="GenRM stand-in server (SIMULATED verdicts).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--config", default="{}", help="StandinConfig fields as JSON")
    args = parser.parse_args(argv)
    serve(StandinConfig(**json.loads(args.config)), host=args.host, port=args.port)


# ---------------------------------------------------------------- subprocess handle


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


# No proxies: the stand-in is always local.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def standin_command(port: int, host: str = "127.0.0.1", config: StandinConfig | None = None) -> list[str]:
    """The stand-in's command line for a launcher."""
    return [sys.executable, "-m", "testing.genrm_standin", "--host", host, "--port", str(port),
            "--config", json.dumps(asdict(config or StandinConfig()))]


class StandinProcess(ManagedServer):
    """The stand-in as a subprocess for the duration of a `with` block, started and stopped by the same
    `ManagedServer` that runs vLLM. `.url` is the OpenAI base URL (`.../v1`), `.base` the server root; its
    stderr (the SIMULATED banner) is passed on once it is up."""

    def __init__(self, config: StandinConfig | None = None, port: int | None = None, host: str = "127.0.0.1"):
        self.config = config or StandinConfig()
        self.port = port or _free_port(host)
        self.base = f"http://{host}:{self.port}"
        self.url = f"{self.base}/v1"
        root = str(Path(__file__).resolve().parents[1])  # importable even without an installed package
        super().__init__(standin_command(self.port, host, self.config), self.base, startup_timeout=60,
                         name="GenRM stand-in", forward_log=True,
                         env={"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)})

    @property
    def returncode(self) -> int | None:
        """None while running; negative (the signal) once stopped."""
        return None if self.process is None else self.process.poll()

    def stats(self, start: float | None = None, end: float | None = None) -> dict:
        """GET /stats, optionally over the wall-clock window [start, end]."""
        query = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
        suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
        with _opener.open(f"{self.base}/stats{suffix}", timeout=10) as reply:
            return orjson.loads(reply.read())

    def reset_stats(self) -> None:
        with _opener.open(urllib.request.Request(f"{self.base}/stats/reset", method="POST"), timeout=10):
            pass


if __name__ == "__main__":
    main()
