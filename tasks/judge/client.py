"""An async GenRM client on the `openai` package that keeps every endpoint's batch full.

One dispatcher loop hands requests to endpoints: the endpoint that already served the pair's other order
when it has a free slot (vLLM's prefix cache then reuses the shared history), else the least-loaded one.
Each endpoint holds as many requests as its concurrency controller allows (`concurrency.py`: found from
vLLM's /metrics gauges, or from observed throughput while they are missing; `max_in_flight` is a hard upper bound). Transient failures (429, 5xx, time-outs, connection
errors) go back in the queue after an exponential back-off with jitter, to whichever endpoint is free;
400s are final; a 429 or 503 waits as long as its `Retry-After` says (up to `retry_after_max`). A request lives
at most `request_timeout` seconds in all, a body trickling in included, and a reply body over
`max_reply_bytes` is read no further (`too_large`). A reply of the wrong shape is a failed judgment
(`bad_response:<what>`), never a crashed run. An endpoint that fails `failure_threshold` times in a row is set aside for a cool-down
that doubles while it keeps failing. Parse failures are final for the run: they are stored with their
reason and raw text, and retried by a later run.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import httpx2
import openai
import orjson

from common.aio import is_stop
from common.errors import UserError
from common.reasons import JudgeFailure
from common.settings import JUDGE_MAX_REPLY_BYTES
from common.tls import tls_context
from tasks.judge.concurrency import Concurrency, parse_vllm_gauges
from tasks.judge.config import JudgeConfig
from tasks.judge.genrm import SideVerdict, Verdict
from tasks.judge.kinds import GENRM, JudgeKind, kind_of
from tasks.judge.preflight import is_context_error, server_root
from tasks.judge.replies import retry_after_seconds
from tasks.judge.server_metrics import DEFAULT_BLOCK, PrefixCacheModel


@dataclass(slots=True)
class JudgeRequest:
    pair_id: str
    order: str
    sample: int
    messages: list[dict[str, str]]
    prior_attempts: int = 0  # answers that came back for this judgment in earlier runs (the attempt limit)
    prior_requests: int = 0  # HTTP requests made for it by earlier runs, answered or not
    prior_failure: str | None = None  # why it failed in an earlier run, if it did
    attempts: int = 0  # answers that came back in this run
    requests: int = 0  # HTTP requests made in this run (transport failures included)
    payload: Any = None  # what else the judge's kind sends beside the messages (`JudgeKind.messages`)

    def seed(self) -> int | None:
        """No seed for a judgment's first sample: the model card's request has none, and a retry must be
        a fresh sample. Further samples get seeds that differ from each other and from every earlier
        request for the same judgment, so no identical seeded request is ever sent twice."""
        if self.sample == 0:
            return None
        return self.sample + 1000 * (self.prior_requests + self.requests)


@dataclass(slots=True)
class JudgeResult:
    request: JudgeRequest
    status: str  # ok | failed
    verdict: Verdict | None = None
    side: SideVerdict | None = None
    failure_reason: str | None = None
    error: str | None = None
    raw_text: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    endpoint: str | None = None
    served_model: str | None = None
    finished_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc).replace(tzinfo=None))


@dataclass(slots=True)
class ClientOptions:
    max_in_flight: int | None = None  # per endpoint, a hard upper bound; None: found from the server (concurrency.py)
    adapt: bool = True  # find the concurrency below max_in_flight; False: exactly max_in_flight
    metrics_poll: float = 0.1  # seconds between readings of the server's /metrics
    metrics_retry: float = 1.0  # seconds between readings while /metrics is missing (observed mode)
    request_timeout: float = 900.0  # seconds a request may live, body included: a 16k-token trace takes minutes
    max_reply_bytes: int = JUDGE_MAX_REPLY_BYTES  # a larger reply body is `too_large`, read no further
    retry_after_max: float = 120.0  # the longest `Retry-After` honoured (a longer one waits this long)
    max_retries: int = 4  # transient failures of one judgment in one run
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    failure_threshold: int = 5  # consecutive transient failures that set an endpoint aside
    cooldown: float = 15.0  # first set-aside, doubled while it keeps failing
    give_up_after: int = 4  # set-asides in a row, on every endpoint at once, that end the run (all are down)
    api_key: str = "EMPTY"
    # Tokens a request's prompt may hold: each prompt is counted as the server counts it (its /tokenize)
    # before it is sent, and one over the budget is `over_budget`, never sent. A server without /tokenize
    # falls back to `estimate(messages)`. None: no check.
    input_budget: int | None = None
    estimate: Callable[[list[dict[str, str]]], int] | None = None
    prefix_block: int = DEFAULT_BLOCK  # the server's KV-cache block: what its prefix cache could serve is counted in it
    # An HTTP client factory (url -> httpx2.AsyncClient): tests run the dispatcher in-process on a fake
    # transport; by default the openai package makes its own client.
    http_client: Callable[[str], Any] | None = None


@dataclass
class ClientStats:
    requests: int = 0
    judged: int = 0
    failed: Counter = field(default_factory=Counter)  # final failures of this run, by reason
    failed_answers: Counter = field(default_factory=Counter)  # answers that came back without a verdict
    transport_failures: Counter = field(default_factory=Counter)  # time-outs, 5xx, 429, connection errors
    retries: int = 0
    retry_after_waits: int = 0  # 429 / 503 retries that waited as the server's Retry-After said
    prompt_tokens: list[int] = field(default_factory=list)  # each request's prompt, as counted before sending
    prompt_tokens_estimated: int = 0  # of them, counted by the estimate (an endpoint without /tokenize)
    over_budget_pairs: set[str] = field(default_factory=set)
    prefix_cache: PrefixCacheModel | None = None  # what an ideal prefix cache could serve (ids from /tokenize)
    first_errors: dict[str, str] = field(default_factory=dict)  # failure reason -> the first error text
    tokens_in: int = 0
    tokens_out: int = 0
    first_response_at: float | None = None
    last_request_sent_at: float | None = None
    concurrency: dict[str, dict] = field(default_factory=dict)  # endpoint -> how its concurrency was found
    # endpoint -> seconds at least one of the run's requests was in flight on it (what its GPUs spent on the run)
    busy_seconds: Counter = field(default_factory=Counter)
    # the run's busy seconds (every endpoint's) as each request ended: the middle of a run, past its ramp-up and
    # before its drain, gives what one more request costs (`tasks.judge.cost.steady_seconds_per_request`)
    busy_at_completion: array = field(default_factory=lambda: array("d"))  # 8 bytes a request
    dispatches: int = 0  # dispatcher runs that sent a request: each drains once, the first also ramps up
    longest_request_s: float = 0.0  # the longest a request that reached a server lived (answered or failed)
    # endpoint -> its concurrency controller: a run's later dispatches (its rounds, the GenRM's after the reward
    # model's) start at the cap its earlier ones found (`Concurrency.resume`)
    controllers: dict[str, Concurrency] = field(default_factory=dict)
    started_at: float | None = None  # when the run's first dispatch began (what the controllers' reports count from)


class ReplyTooLarge(Exception):
    """A reply body past the cap: the rest of it is never read."""

    def __init__(self, limit: int, seen: int):
        super().__init__(f"reply body over {limit} bytes (stopped reading at {seen}); not read further")


class _CappedStream(httpx2.AsyncByteStream):
    """A response body stream that stops with `ReplyTooLarge` once more than `limit` bytes came in."""

    def __init__(self, stream: Any, limit: int):
        self.stream = stream
        self.limit = limit

    async def __aiter__(self):
        seen = 0
        async for chunk in self.stream:
            seen += len(chunk)
            if seen > self.limit:
                raise ReplyTooLarge(self.limit, seen)
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


def _cap_replies(limit: int) -> Callable[[Any], Any]:
    """An httpx response hook: a declared length over `limit` is refused before reading, any other body is
    cut off as soon as it passes `limit` (error bodies too: the openai package reads those itself)."""

    async def hook(response: Any) -> None:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await response.aclose()
            raise ReplyTooLarge(limit, int(declared))
        response.stream = _CappedStream(response.stream, limit)

    return hook


def _http_client(url: str, options: ClientOptions) -> Any:
    client = options.http_client(url) if options.http_client else httpx2.AsyncClient(
        timeout=options.request_timeout, limits=httpx2.Limits(max_connections=None, max_keepalive_connections=256),
        verify=tls_context())
    client.event_hooks["response"].append(_cap_replies(options.max_reply_bytes))
    # Uncompressed bodies: the cap then bounds what is held in memory, not what a compressed body expands to.
    client.headers["Accept-Encoding"] = "identity"
    return client


class _Endpoint:
    def __init__(self, url: str, options: ClientOptions, concurrency: Concurrency | None = None):
        self.url = url
        self.http = _http_client(url, options)  # the chat requests' connections serve /tokenize too
        self.client = openai.AsyncOpenAI(base_url=url, api_key=options.api_key, max_retries=0,
                                         timeout=options.request_timeout, http_client=self.http)
        self.in_flight = 0
        fixed = options.max_in_flight is not None and not options.adapt
        self.concurrency = concurrency or Concurrency(options.max_in_flight, mode="fixed" if fixed else "metrics")
        self.metrics_url = server_root(url) + "/metrics"
        self.failures = 0
        self.available_at = 0.0
        self.cooldown = options.cooldown
        self.set_asides = 0  # in a row, since its last success
        self.last_error = ""
        self.tokenizes = True  # until its /tokenize says otherwise
        self.busy_since = 0.0  # when its in-flight count last rose from 0


class NotYet:
    """What a request source yields when its next request may not go yet (a GPU-hour budget waiting for what is
    out to come back): the dispatcher asks it again once a request ended."""


NOT_YET = NotYet()


class EndpointsDownError(UserError, RuntimeError):
    """Every endpoint failed again and again: the run stops, nothing is lost."""


def _transient(err: BaseException) -> tuple[bool, str]:
    """(worth retrying, failure reason) for a request error."""
    if isinstance(err, (openai.APITimeoutError, TimeoutError, httpx2.TimeoutException)):
        return True, JudgeFailure.TIMEOUT
    if isinstance(err, (openai.APIConnectionError, httpx2.TransportError)):
        return True, JudgeFailure.CONNECTION_ERROR
    if isinstance(err, openai.APIStatusError):
        code = err.status_code
        if code == 400 and is_context_error(str(err.message)):
            return False, JudgeFailure.TOO_LONG  # the server's context cannot hold it: final, never sent again as it is
        return (code == 429 or code >= 500), JudgeFailure.HTTP_STATUS.of(code)
    if isinstance(err, httpx2.HTTPStatusError):
        code = err.response.status_code
        return (code == 429 or code >= 500), JudgeFailure.HTTP_STATUS.of(code)
    return False, JudgeFailure.CLIENT_ERROR.of(type(err).__name__)


def _cause(err: BaseException, kind: type) -> BaseException | None:
    """`err` or the first exception of type `kind` in its cause / context chain."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, kind):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def _retry_after(err: BaseException, longest: float) -> float | None:
    """The wait a 429 or 503 asked for in its `Retry-After` header, at most `longest` seconds."""
    if not isinstance(err, openai.APIStatusError) or err.status_code not in (429, 503):
        return None
    wait = retry_after_seconds(err.response.headers.get("retry-after"))
    return None if wait is None else min(wait, longest)


def _error_text(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return text[:2000]


class Dispatcher:
    """Runs requests against endpoints; `on_result` stores a result and may return follow-up requests."""

    def __init__(
        self,
        endpoints: list[str],
        config: JudgeConfig,
        options: ClientOptions,
        on_result: Callable[[JudgeResult], Iterable[JudgeRequest]],
        rng: random.Random | None = None,
        gate: Callable[[str], AbstractAsyncContextManager] | None = None,
        stats: ClientStats | None = None,
        kind: JudgeKind | None = None,
    ):
        if not endpoints:
            raise ValueError("at least one endpoint is needed")
        self.stats = ClientStats() if stats is None else stats  # a run in rounds counts every round's dispatcher in one
        now = time.monotonic()
        self.endpoints = []
        for url in (u.rstrip("/") for u in endpoints):
            endpoint = _Endpoint(url, options, self.stats.controllers.get(url))
            endpoint.concurrency.resume(now)
            self.stats.controllers[url] = endpoint.concurrency
            self.endpoints.append(endpoint)
        self.config = config
        self.kind = kind or (GENRM if config.is_genrm else kind_of(config.kind))  # how a judgment is asked and read
        self.options = options
        self.on_result = on_result
        self.rng = rng or random.Random()
        self.gate = gate  # a slot shared with other processes per endpoint (a Prefect global concurrency limit)
        self._ready: list[JudgeRequest] = []  # a stack of follow-ups, consumed before the source
        self._delayed: list[tuple[float, int, JudgeRequest]] = []
        self._seq = itertools.count()
        self._affinity: dict[str, _Endpoint] = {}
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()
        self._error: BaseException | None = None
        self._counted: dict[tuple[str, str], int] = {}  # (pair, order) -> prompt tokens: samples share a prompt
        self._ids: dict[tuple[str, str], list[int]] = {}  # (pair, order) -> the prompt's token ids, where known

    # -- choosing where a request goes ----------------------------------------------------------
    def _pick(self, request: JudgeRequest, now: float) -> _Endpoint | None:
        preferred = self._affinity.get(request.pair_id)
        if preferred is not None and preferred.in_flight < preferred.concurrency.cap and preferred.available_at <= now:
            return preferred
        free = [e for e in self.endpoints if e.in_flight < e.concurrency.cap and e.available_at <= now]
        return min(free, key=lambda e: e.in_flight) if free else None

    def _remember(self, pair_id: str, endpoint: _Endpoint) -> None:
        """Recent pairs only: a pair's orders and follow-ups are sent close together."""
        self._affinity[pair_id] = endpoint
        if len(self._affinity) > 4096:
            del self._affinity[next(iter(self._affinity))]

    def _backoff(self, attempt: int) -> float:
        base = min(self.options.backoff_max, self.options.backoff_base * 2 ** max(0, attempt - 1))
        return base * self.rng.uniform(0.5, 1.5)

    # -- one request ----------------------------------------------------------------------------
    async def _send(self, request: JudgeRequest, endpoint: _Endpoint) -> None:
        sent_before = request.requests
        try:
            async with self.gate(endpoint.url) if self.gate else nullcontext():
                await self._request(request, endpoint)
        finally:
            endpoint.in_flight -= 1
            now = time.monotonic()
            if endpoint.in_flight == 0:
                self.stats.busy_seconds[endpoint.url] += now - endpoint.busy_since
            if request.requests > sent_before:  # it reached the server (one over the token budget never does)
                self.stats.busy_at_completion.append(self._busy_now(now))
            self._wake.set()

    def spending(self) -> tuple[float, int, int, float]:
        """(the run's busy seconds so far, its open stretches included; its requests that came back from the
        server; its requests out now; the longest a request lived): what a GPU-hour budget checked between two
        sends reads."""
        return (self._busy_now(time.monotonic()), len(self.stats.busy_at_completion),
                sum(e.in_flight for e in self.endpoints), self.stats.longest_request_s)

    def _busy_now(self, now: float) -> float:
        """The run's busy seconds so far, the stretches still open included."""
        return sum(self.stats.busy_seconds.values()) + sum(now - e.busy_since for e in self.endpoints if e.in_flight)

    async def _prompt_tokens(self, request: JudgeRequest, endpoint: _Endpoint) -> int | None:
        """The request's prompt tokens: the server's count where it has /tokenize, else the estimate (None
        when there is no estimate either)."""
        key = (request.pair_id, request.order)
        if key in self._counted:
            return self._counted[key]
        count = ids = None
        if endpoint.tokenizes:
            try:
                count, ids = await self.kind.count_tokens(endpoint.http, endpoint.url, self.config.model,
                                                          request.messages, request.payload)
            except httpx2.HTTPStatusError as err:
                if err.response.status_code not in (404, 405):
                    raise
                endpoint.tokenizes = False
        if count is None:
            if self.options.estimate is None:
                return None
            count = self.options.estimate(request.messages)
            self.stats.prompt_tokens_estimated += 1
        self._counted[key] = count
        if len(self._counted) > 8192:
            del self._counted[next(iter(self._counted))]
        if ids is not None:
            self._ids[key] = ids
            if len(self._ids) > 4096:
                del self._ids[next(iter(self._ids))]
        return count

    def _prefix_reuse(self, request: JudgeRequest) -> None:
        """Count what an ideal prefix cache could serve of this request from every request sent before it."""
        ids = self._ids.get((request.pair_id, request.order))
        if ids is None:
            return
        if self.stats.prefix_cache is None:
            self.stats.prefix_cache = PrefixCacheModel(self.options.prefix_block)
        self.stats.prefix_cache.offer(ids)

    async def _within_budget(self, request: JudgeRequest, endpoint: _Endpoint) -> bool:
        """Count the prompt before sending it; a prompt over the budget is a final failure, never sent."""
        if self.options.input_budget is None:
            return True
        count = await self._prompt_tokens(request, endpoint)
        if count is None:
            return True
        self.stats.prompt_tokens.append(count)
        if count <= self.options.input_budget:
            self._prefix_reuse(request)
            return True
        self.stats.over_budget_pairs.add(request.pair_id)
        result = JudgeResult(request, "failed", failure_reason=JudgeFailure.OVER_BUDGET, endpoint=endpoint.url,
                             error=f"the prompt has {count} tokens, over the judge's input budget of "
                                   f"{self.options.input_budget} (max_model_len - max_tokens); not sent")
        self._finish(result, record=request.prior_failure != JudgeFailure.OVER_BUDGET)  # recorded once
        return False

    async def _request(self, request: JudgeRequest, endpoint: _Endpoint) -> None:
        try:
            if not await self._within_budget(request, endpoint):
                return
        except Exception as err:  # noqa: BLE001 - the count failed: the request failed, retried as any other
            self._failed_request(request, endpoint, err, 0.0)
            return
        seed = request.seed()
        request.requests += 1
        self.stats.requests += 1
        self.stats.last_request_sent_at = time.time()
        started = time.perf_counter()
        try:
            # The whole life of the request, a body trickling in byte by byte included: httpx's own
            # time-outs bound each read, not their sum.
            async with asyncio.timeout(self.options.request_timeout):
                data = await self.kind.send(endpoint, self.config, request.messages, request.payload, seed)
        except Exception as err:  # noqa: BLE001 - every failure is classified below
            too_large = _cause(err, ReplyTooLarge)  # raised by the body cap, perhaps wrapped by the openai package
            if too_large is None:
                self._failed_request(request, endpoint, err, time.perf_counter() - started)
            else:  # an answer came back, one too large to read: final, and it counts as an attempt
                self._answered(request, endpoint, JudgeResult(
                    request, "failed", failure_reason=JudgeFailure.TOO_LARGE, error=str(too_large),
                    latency_s=time.perf_counter() - started, endpoint=endpoint.url))
            return
        finally:  # how long the server may hold a request: what a budget reserves for a drain
            self.stats.longest_request_s = max(self.stats.longest_request_s, time.perf_counter() - started)
        self._answered(request, endpoint, self._result_from_data(request, endpoint, data, time.perf_counter() - started))

    def _answered(self, request: JudgeRequest, endpoint: _Endpoint, result: JudgeResult) -> None:
        """An answer came back (a verdict or not): it counts toward the judgment's attempt limit."""
        request.attempts += 1
        endpoint.failures = 0
        endpoint.cooldown = self.options.cooldown
        endpoint.set_asides = 0
        if self.stats.first_response_at is None:
            self.stats.first_response_at = time.time()
        endpoint.concurrency.on_completion(result.latency_s, endpoint.in_flight, time.monotonic())
        if result.status == "failed":  # it came back without a verdict: a parse failure or a truncation
            self.stats.failed_answers[result.failure_reason or JudgeFailure.UNKNOWN] += 1
        self._finish(result)

    def _result_from_data(self, request: JudgeRequest, endpoint: _Endpoint, data: bytes, latency: float) -> JudgeResult:
        """The judgment a reply body makes: a verdict, or a failure saying what was wrong with the reply."""
        try:
            body = orjson.loads(data)  # skipping pydantic: measurably cheaper per request
        except orjson.JSONDecodeError as err:
            return JudgeResult(request, "failed", failure_reason=JudgeFailure.BAD_RESPONSE_NOT_JSON,
                               error=f"{err}; body began {data[:120]!r}", latency_s=latency, endpoint=endpoint.url)
        try:
            return self._result_from_body(request, endpoint, body, latency)
        except Exception as err:  # noqa: BLE001 - a reply no rule foresaw is still one failed judgment
            return JudgeResult(request, "failed", failure_reason=JudgeFailure.BAD_RESPONSE_UNREADABLE,
                               error=f"{type(err).__name__}: {str(err)[:500]}", latency_s=latency, endpoint=endpoint.url)

    def _result_from_body(self, request: JudgeRequest, endpoint: _Endpoint, body: Any, latency: float) -> JudgeResult:
        reading = self.kind.read(body, (request.order, request.sample))
        # a Reading holds a JudgeResult's reply fields under the same names
        return JudgeResult(request, **reading._asdict(), latency_s=latency, endpoint=endpoint.url)

    def _failed_request(self, request: JudgeRequest, endpoint: _Endpoint, err: Exception, latency: float) -> None:
        retry, reason = _transient(err)
        self.stats.transport_failures[reason] += 1
        wait = _retry_after(err, self.options.retry_after_max) if retry else None
        if wait is not None:  # the server said when to come back: no new request goes there before then
            endpoint.available_at = max(endpoint.available_at, time.monotonic() + wait)
        # A request sent before its endpoint was set aside does not count against it again.
        if retry and endpoint.available_at <= time.monotonic():
            endpoint.failures += 1
            endpoint.last_error = f"{reason}: {str(err)[:200]}"
            if endpoint.failures >= self.options.failure_threshold:
                endpoint.available_at = time.monotonic() + endpoint.cooldown
                endpoint.cooldown = min(endpoint.cooldown * 2, 600.0)
                endpoint.set_asides += 1
                if all(e.set_asides >= self.options.give_up_after for e in self.endpoints) and self._error is None:
                    # Every endpoint keeps failing: stop with the reason rather than wait out ever longer
                    # cool-downs. Judgments not yet sent stay pending for the next run.
                    self._error = EndpointsDownError(
                        "every judge endpoint kept failing (" + "; ".join(
                            f"{e.url}: {e.set_asides} cool-downs in a row, last {e.last_error}" for e in self.endpoints)
                        + "): is the server up? Judgments not sent stay pending; rerun when it is")
                endpoint.failures = 0
        if retry and request.requests - request.attempts <= self.options.max_retries:
            self.stats.retries += 1
            self.stats.retry_after_waits += wait is not None
            delay = wait if wait is not None else self._backoff(request.attempts)
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._seq), request))
            return
        self._finish(JudgeResult(request, "failed", failure_reason=reason, error=_error_text(err), latency_s=latency,
                                 endpoint=endpoint.url))

    def _finish(self, result: JudgeResult, record: bool = True) -> None:
        """Count a judgment's final result and hand it on (`record` False: it is already in the cache as it is)."""
        if result.status == "ok":
            self.stats.judged += 1
        else:
            reason = result.failure_reason or JudgeFailure.UNKNOWN
            self.stats.failed[reason] += 1
            self.stats.first_errors.setdefault(reason, (result.error or "")[:300])
        self.stats.tokens_in += result.tokens_in
        self.stats.tokens_out += result.tokens_out
        if not record:
            return
        follow_ups = list(self.on_result(result))
        self._ready.extend(reversed(follow_ups))  # sent next, close to the first verdict

    # -- the loop ---------------------------------------------------------------------------------
    def _done(self, task: asyncio.Task) -> None:
        # wake the loop only once the task has left the in-flight set, or the loop could sleep forever
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None and self._error is None:
            self._error = task.exception()  # e.g. the sink could not write: stop, don't lose it silently
        self._wake.set()

    def _watcher_done(self, task: asyncio.Task) -> None:
        # A watcher ends only when cancelled, or when something it does not catch lands in it: a stop signal
        # whose handler raises (Prefect's SIGTERM bridge raises a BaseException, which asyncio keeps in the
        # task it interrupted). The run stops on it, or the signal would be lost and the run would go on.
        if not task.cancelled() and task.exception() is not None and self._error is None:
            self._error = task.exception()
        self._wake.set()

    def _next(self, source: Iterator[JudgeRequest | NotYet], now: float) -> JudgeRequest | NotYet | None:
        while self._delayed and self._delayed[0][0] <= now:
            self._ready.append(heapq.heappop(self._delayed)[2])
        if self._ready:
            return self._ready.pop()
        return next(source, None)

    async def _watch_metrics(self, endpoint: _Endpoint) -> None:
        """Read the server's batch gauges while the run lasts. Three missed readings in a row switch the
        endpoint to the observed-throughput controller; it keeps asking, every `metrics_retry` seconds, and
        goes back to the gauges as soon as they answer again (a restarted server)."""
        control = endpoint.concurrency
        client = self.options.http_client(endpoint.url) if self.options.http_client else httpx2.AsyncClient(
            timeout=2.0, verify=tls_context())
        misses = 0
        try:
            while True:
                try:
                    reply = await client.get(endpoint.metrics_url, timeout=2.0)
                    gauges = parse_vllm_gauges(reply.text) if reply.status_code == 200 else None
                except Exception:  # noqa: BLE001 - a missing /metrics is a mode, not a failure
                    gauges = None
                if gauges is None:
                    misses += 1
                    if misses >= 3:
                        control.no_metrics(time.monotonic())
                else:
                    misses = 0
                    before = control.cap
                    control.metrics_back(time.monotonic())
                    control.on_gauges(*gauges, endpoint.in_flight, time.monotonic())
                    if control.cap > before:
                        self._wake.set()
                await asyncio.sleep(self.options.metrics_poll if control.mode == "metrics"
                                    else self.options.metrics_retry)
        finally:
            await client.aclose()

    async def run(self, requests: Iterable[JudgeRequest | NotYet]) -> ClientStats:
        if self.stats.started_at is None:
            self.stats.started_at = time.monotonic()
        sent_before = self.stats.requests
        watchers = [asyncio.create_task(self._watch_metrics(e)) for e in self.endpoints
                    if e.concurrency.mode != "fixed"]  # observed: watching for the gauges to come back
        for w in watchers:
            w.add_done_callback(self._watcher_done)
        try:
            return await self._run(requests)
        finally:
            self.stats.dispatches += self.stats.requests > sent_before
            for w in watchers:
                w.cancel()
            ended = await asyncio.gather(*watchers, return_exceptions=True)
            self.stats.concurrency = {e.url: e.concurrency.report(self.stats.started_at) for e in self.endpoints}
            # a stop signal that landed in a watcher as it was closing reached no one else: the run ends on it
            stops = [x for x in ended if is_stop(x)]
            if stops:
                raise stops[0]

    async def _run(self, requests: Iterable[JudgeRequest | NotYet]) -> ClientStats:
        source = iter(requests)
        held: JudgeRequest | None = None
        exhausted = False
        while True:
            if self._error is not None:
                for task in list(self._tasks):
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)
                raise self._error
            now = time.monotonic()
            if held is None and not exhausted:
                held = self._next(source, now)
                exhausted = held is None and not self._ready
                if held is NOT_YET:  # asked again once a request ended (it waits for one below)
                    held = None
            elif held is None:
                held = self._next(iter(()), now)
            if held is not None:
                endpoint = self._pick(held, now)
                if endpoint is not None:
                    if endpoint.in_flight == 0:
                        endpoint.busy_since = time.monotonic()
                    endpoint.in_flight += 1
                    self._remember(held.pair_id, endpoint)
                    task = asyncio.create_task(self._send(held, endpoint))
                    self._tasks.add(task)
                    task.add_done_callback(self._done)
                    held = None
                    continue
            if held is None and exhausted and not self._tasks and not self._delayed and not self._ready:
                break
            # wait for a slot, a result, or the next delayed retry / endpoint coming back; a request already
            # held waits only for an endpoint (a delayed retry past due cannot go first, so it must not wake us)
            waits = [e.available_at for e in self.endpoints if e.available_at > now]
            if held is None:
                waits += [d[0] for d in self._delayed[:1]]
            timeout = max(0.0, min(waits) - now) if waits else None
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        for e in self.endpoints:
            await e.client.close()
        return self.stats
