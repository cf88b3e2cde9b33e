"""Judging a set of pairs: plan the judgments the strategy needs and the cache lacks, run them through
the dispatcher, and hand results to a sink in batches as they complete (not at the end).

A strategy that judges in rounds (`Strategy.ladder`) is run round by round: each round's verdicts are written
before the next is planned, by a `Rounds` the caller gives (the curation decides which pairs are not yet sure:
`tasks.review.rounds`), and every round is planned against the cache like any run, so a rerun pays nothing
twice."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, NamedTuple, Protocol

import pyarrow as pa

from common import aio, progress
from schemas.summaries import JudgeSummary
from tasks.judge.client import NOT_YET, ClientOptions, ClientStats, Dispatcher, JudgeRequest, JudgeResult, NotYet
from tasks.judge.config import JudgeConfig
from tasks.judge.context import JudgeRun
from tasks.judge.estimate import Budget
from tasks.judge.genrm import SideVerdict, build_messages
from tasks.judge.kinds import GENRM, JudgeKind, kind_of
from tasks.judge.kinds.protocol import kind_pair_messages
from tasks.judge.strategies import ORDERS, Slot, Strategy, as_shown, slots_said
from warehouse.judging import PairText

_log = logging.getLogger(__name__)


class JudgmentState(NamedTuple):
    """What the cache knows of one (pair, order, sample) under a configuration."""

    status: str  # ok | failed
    attempts: int  # answers that came back (the cross-run attempt limit counts these)
    margin_a: float | None = None
    score_a: int | None = None
    score_b: int | None = None
    requests: int = 0  # HTTP requests made for it, transport failures included
    failure_reason: str | None = None


States = dict[tuple[str, str, int], JudgmentState]  # keyed by (pair id, order, sample)
Wanted = Mapping[str, Sequence[Slot]]  # pair id -> the judgments a round asks of it, and those alone


def as_states(rows: dict[tuple[str, str, int], tuple]) -> States:
    """The warehouse's state tuples as `JudgmentState`s."""
    return {key: JudgmentState(*value) for key, value in rows.items()}

class JudgmentColumn(NamedTuple):
    """One column of a judgments table: its name, its Arrow type, and how a result fills it."""

    name: str
    type: pa.DataType
    value: Callable[[JudgeResult], Any] | None  # None: the batch's own, the same on every row


def _verdict(field_name: str) -> Callable[[JudgeResult], Any]:
    return lambda r: getattr(r.verdict, field_name) if r.verdict else None


def _side(field_name: str) -> Callable[[JudgeResult], Any]:
    return lambda r: getattr(r.side, field_name) if r.side else None


# The one declaration of a judgment's columns, in the order of the table the warehouse, the exchange's result
# files and the merge read: JUDGMENT_SCHEMA and `results_table` are both made from it.
JUDGMENT_COLUMNS: tuple[JudgmentColumn, ...] = tuple(JudgmentColumn(*c) for c in (
    ("pair_id", pa.string(), attrgetter("request.pair_id")),
    ("judge_config_id", pa.string(), None),
    ("order", pa.string(), attrgetter("request.order")),
    ("sample_index", pa.int32(), attrgetter("request.sample")),
    ("status", pa.string(), attrgetter("status")),
    ("score_1", pa.int32(), _verdict("score_1")),
    ("score_2", pa.int32(), _verdict("score_2")),
    ("ranking", pa.int32(), _verdict("ranking")),
    ("score_a", pa.int32(), _side("score_a")),
    ("score_b", pa.int32(), _side("score_b")),
    ("ranking_a", pa.int32(), _side("ranking_a")),
    ("margin_a", pa.float64(), _side("margin")),
    ("failure_reason", pa.string(), attrgetter("failure_reason")),
    ("error", pa.string(), attrgetter("error")),
    ("raw_text", pa.string(), attrgetter("raw_text")),
    ("reasoning", pa.string(), attrgetter("reasoning")),
    ("finish_reason", pa.string(), attrgetter("finish_reason")),
    ("tokens_in", pa.int32(), attrgetter("tokens_in")),
    ("tokens_out", pa.int32(), attrgetter("tokens_out")),
    ("latency_s", pa.float64(), attrgetter("latency_s")),
    # across runs: what earlier runs spent on the judgment and this one
    ("attempts", pa.int32(), lambda r: r.request.prior_attempts + r.request.attempts),
    ("requests", pa.int32(), lambda r: r.request.prior_requests + r.request.requests),
    ("endpoint", pa.string(), attrgetter("endpoint")),
    ("served_model", pa.string(), attrgetter("served_model")),
    ("judge_run_id", pa.string(), None),
    ("finished_at", pa.timestamp("us"), attrgetter("finished_at")),
))
JUDGMENT_SCHEMA = pa.schema([(c.name, c.type) for c in JUDGMENT_COLUMNS])


def results_table(results: list[JudgeResult], config_id: str, run_id: str) -> pa.Table:
    """A batch of results as a judgments table, all under configuration `config_id` and run `run_id`."""
    batch = {"judge_config_id": config_id, "judge_run_id": run_id}  # the columns declared with no `value`
    return pa.table({c.name: [batch[c.name]] * len(results) if c.value is None else [c.value(r) for r in results]
                     for c in JUDGMENT_COLUMNS}, schema=JUDGMENT_SCHEMA)


class BatchedSink:
    """Collects results and writes them in batches: every `batch_size` results or `max_seconds`."""

    def __init__(self, write: Callable[[list[JudgeResult]], None], batch_size: int = 64, max_seconds: float = 2.0):
        self.write = write
        self.batch_size = batch_size
        self.max_seconds = max_seconds
        self.buffer: list[JudgeResult] = []
        self.last_flush = time.monotonic()
        self.written = 0

    def add(self, result: JudgeResult) -> None:
        self.buffer.append(result)
        if len(self.buffer) >= self.batch_size or time.monotonic() - self.last_flush >= self.max_seconds:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            batch, self.buffer = self.buffer, []
            self.write(batch)
            self.written += len(batch)
        self.last_flush = time.monotonic()


@dataclass(slots=True)
class PairProgress:
    """What a run knows of one pair's judgments: the verdicts settled so far (None: failed for good) and every
    judgment already considered, so that no follow-up is asked twice."""

    known: dict[Slot, SideVerdict | None] = field(default_factory=dict)
    asked: set[Slot] = field(default_factory=set)


@dataclass
class Plan:
    """What a run will ask for, and what the cache already answers."""

    skipped_cached: int = 0  # judgments already 'ok'
    exhausted: int = 0  # failed judgments at the attempt limit: not asked again
    progress: dict[str, PairProgress] = field(default_factory=dict)  # by pair, for strategies that follow up


def _side_from_state(state: JudgmentState) -> SideVerdict | None:
    if state.status != "ok" or state.margin_a is None:
        return None
    return SideVerdict.of_margin(state.score_a, state.score_b, state.margin_a)


def _consider(pair_id: str, slots: list[Slot] | tuple[Slot, ...], strategy: Strategy, states: States,
              max_attempts: int, plan: Plan, pair: PairProgress | None) -> list[tuple[str, int, JudgmentState | None]]:
    """Of `slots` and the follow-ups the cache's verdicts then call for: (order, sample, state so far) of those
    still to ask; the cached and the exhausted ones are counted and become known verdicts. `pair` None: a
    strategy that never follows up, so `slots` are all there is and no verdict needs keeping."""
    needed = []
    while slots:
        for order, sample in slots:
            state = states.get((pair_id, order, sample))
            if state is None:
                needed.append((order, sample, None))
            elif state.status == "ok":
                plan.skipped_cached += 1
                if pair is not None:
                    pair.known[(order, sample)] = _side_from_state(state)
            elif state.attempts >= max_attempts:
                plan.exhausted += 1
                if pair is not None:
                    pair.known[(order, sample)] = None
            else:
                needed.append((order, sample, state))
        if pair is None:
            break
        pair.asked.update(slots)
        slots = [s for s in strategy.follow_ups(pair.known) if s not in pair.asked]
    return needed


class Planner:
    """Plans pairs one by one under one strategy. What holds for every pair (the initial judgments, whether
    verdicts call for more) is read from the strategy once, here: at a million pairs, asking it per pair
    cost more than the planning itself."""

    def __init__(self, strategy: Strategy, states: States, max_attempts: int):
        self.strategy, self.states, self.max_attempts = strategy, states, max_attempts
        self.initial = tuple(strategy.initial())
        self.follows_up = strategy.asks_follow_ups

    def initial_of(self, pair_id: str, longer_a: bool) -> tuple[Slot, ...]:
        """The strategy's initial judgments as the pair gets them (`longer_a`: its answer A is the longer): in its
        first order where the strategy judges one order first (`protocol.first_order`, from what the cache holds of
        it), else as written."""
        tried = [(pair_id, order, 0) in self.states for order in ORDERS]
        return tuple(as_shown(self.strategy, self.initial, *tried, longer_a))

    def slots(self, pair_id: str, plan: Plan, wanted: Sequence[Slot] | None = None, longer_a: bool = False,
              ) -> list[tuple[str, int, JudgmentState | None]]:
        """(order, sample, state so far) the pair still needs first: its initial judgments (`initial_of`) and the
        follow-ups its cached verdicts call for, or exactly `wanted` (a round's); cached and exhausted ones are
        counted in `plan`. Without its texts (`longer_a` unknown) a pair the cache holds nothing of gets the first
        order as written: as many judgments, so whether it has work left is the same either way."""
        initial = self.initial_of(pair_id, longer_a) if wanted is None else tuple(wanted)
        if wanted is not None or not self.follows_up:
            return _consider(pair_id, initial, self.strategy, self.states, self.max_attempts, plan, None)
        pair = PairProgress()  # its later verdicts may call for more: keep what is known
        plan.progress[pair_id] = pair
        return _consider(pair_id, initial, self.strategy, self.states, self.max_attempts, plan, pair)


def longer_a(pair: PairText) -> bool:
    """Whether the pair's answer A is the longer (in characters, as the warehouse's `length` counts them)."""
    return len(pair.response_a) > len(pair.response_b)


def first_round(strategy: Strategy, pairs: list[PairText], states: States) -> Wanted:
    """A run in rounds' first round: the strategy's initial judgments of each pair, in its first order."""
    planner = Planner(strategy, states, 0)
    return {p.pair_id: planner.initial_of(p.pair_id, longer_a(p)) for p in pairs}


def planned_slots(pair_id: str, strategy: Strategy, states: States, max_attempts: int, plan: Plan) -> list[tuple[str, int, JudgmentState | None]]:
    """`Planner.slots` of one pair (planning many: one `Planner` for them all)."""
    return Planner(strategy, states, max_attempts).slots(pair_id, plan)


def _request(pair: PairText, order: str, sample: int, state: JudgmentState | None,
             kind: JudgeKind = GENRM) -> JudgeRequest:
    if kind is GENRM:  # the GenRM's layout (genrm.build_messages), nothing beside it
        messages, payload = build_messages(pair.history, pair.response_a, pair.response_b, order), None
    else:
        messages, payload = kind_pair_messages(pair, kind, (order, sample))
    return JudgeRequest(pair.pair_id, order, sample, messages,
                        prior_attempts=state.attempts if state else 0, prior_requests=state.requests if state else 0,
                        prior_failure=state.failure_reason if state else None, payload=payload)


def estimated_prompt_tokens(messages: list[dict[str, str]]) -> int:
    """A prompt's tokens by the ingest's estimate: only for a server that cannot count them itself."""
    from tasks.ingest.normalize import estimate_request_tokens

    return estimate_request_tokens([m["content"] for m in messages])


def plan_requests(pairs: list[PairText], strategy: Strategy, states: States, max_attempts: int,
                  plan: Plan, wanted: Wanted | None = None, kind: JudgeKind = GENRM,
                  admit: Callable[[int], bool | None] | None = None) -> Iterator[JudgeRequest | NotYet]:
    """The requests a run sends first, pair by pair (a pair's orders next to each other), of the strategy's
    judgments or of `wanted` alone; each is counted against the input budget by the dispatcher, as the server
    counts it, before it is sent. `admit(n)`: whether a pair asking at most `n` judgments may go (a GPU-hour
    budget): True, it goes; None, not yet (`NOT_YET` is yielded, and the same pair asked again once a request came
    back); False, the requests end there, before that pair is planned."""
    planner = Planner(strategy, states, max_attempts)
    initial = len(strategy.initial())
    for pair in pairs:
        if admit is not None:
            asked = initial if wanted is None else len(wanted[pair.pair_id])
            verdict = admit(asked)
            while verdict is None:
                yield NOT_YET
                verdict = admit(asked)
            if not verdict:
                return
        for order, sample, state in planner.slots(pair.pair_id, plan, None if wanted is None else wanted[pair.pair_id],
                                                  longer_a(pair)):
            yield _request(pair, order, sample, state, kind)


def token_distribution(counts: list[int], estimated: int) -> dict[str, Any]:
    """Percentiles of the prompts' token counts, and whether the server counted them."""
    if not counts:
        return {"requests": 0}
    ordered = sorted(counts)

    def at(q: float) -> int:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"requests": len(ordered), "p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": ordered[-1],
            "counted_by": "estimate" if estimated == len(ordered) else "server" if not estimated else
            f"server ({estimated} estimated)"}


def _dispatch(pairs: list[PairText], *, endpoints: list[str], config: JudgeConfig, strategy: Strategy,
              options: ClientOptions, states: States, sink: BatchedSink, plan: Plan, stats: ClientStats,
              max_attempts: int, on_progress: Callable[[int], None] | None, gate: Callable[[str], Any] | None,
              wanted: Wanted | None = None, admit: Callable[[Dispatcher, int], bool | None] | None = None) -> None:
    """Send what `pairs` need (the strategy's judgments and follow-ups, or `wanted` alone), counting into
    `plan` and `stats`; every result goes to `sink`, flushed before this returns, whatever happens. `admit`: whether
    the dispatcher, as it stands, may take a pair asking at most n judgments (`plan_requests`)."""
    texts = {p.pair_id: p for p in pairs}
    follows_up = strategy.asks_follow_ups and wanted is None
    kind = kind_of(config.kind)

    def on_result(result: JudgeResult):
        sink.add(result)
        if on_progress:
            on_progress(1)
        if not follows_up:
            return []
        req = result.request
        pair = plan.progress.setdefault(req.pair_id, PairProgress())
        pair.known[(req.order, req.sample)] = result.side
        follow = [s for s in strategy.follow_ups(pair.known) if s not in pair.asked]
        return [_request(texts[req.pair_id], order, sample, state, kind)
                for order, sample, state in _consider(req.pair_id, follow, strategy, states, max_attempts, plan, pair)]

    dispatcher = Dispatcher(endpoints, config, options, on_result, gate=gate, stats=stats)
    within = None if admit is None else (lambda n: admit(dispatcher, n))
    try:
        aio.run(dispatcher.run(plan_requests(pairs, strategy, states, max_attempts, plan, wanted, kind, within)))
    finally:
        sink.flush()


def _budgeted(options: ClientOptions, input_budget: int | None) -> ClientOptions:
    if input_budget is None:
        return options
    return replace(options, input_budget=input_budget, estimate=options.estimate or estimated_prompt_tokens)


def judge_pairs(
    pairs: list[PairText],
    *,
    endpoints: list[str],
    config: JudgeConfig,
    strategy: Strategy,
    options: ClientOptions,
    states: States,
    write: Callable[[list[JudgeResult]], None],
    max_attempts: int = 3,
    sink_batch: int = 64,
    on_progress: Callable[[int], None] | None = None,
    gate: Callable[[str], Any] | None = None,
    input_budget: int | None = None,
    wanted: Wanted | None = None,
) -> JudgeSummary:
    """Judge `pairs` under `strategy` (or exactly the judgments `wanted` names per pair); write results
    through `write` in batches. Returns the summary."""
    started = time.perf_counter()
    plan, stats = Plan(), ClientStats()
    _dispatch(pairs, endpoints=endpoints, config=config, strategy=strategy, options=_budgeted(options, input_budget),
              states=states, sink=BatchedSink(write, batch_size=sink_batch), plan=plan, stats=stats,
              max_attempts=max_attempts, on_progress=on_progress, gate=gate, wanted=wanted)
    return _summary(len(pairs), plan, stats, time.perf_counter() - started)


def _summary(pairs: int, plan: Plan, stats: ClientStats, seconds: float) -> JudgeSummary:
    return {
        "pairs": pairs,
        "judged": stats.judged,
        "failed": dict(stats.failed.most_common()),
        "failed_answers": dict(stats.failed_answers.most_common()),
        "transport_failures": dict(stats.transport_failures.most_common()),
        "over_budget": len(stats.over_budget_pairs),
        "skipped_cached": plan.skipped_cached,
        "skipped_exhausted": plan.exhausted,
        "requests": stats.requests,
        "retries": stats.retries,
        "retry_after_waits": stats.retry_after_waits,
        "prompt_tokens": token_distribution(stats.prompt_tokens, stats.prompt_tokens_estimated),
        "prefix_reuse": {"attainable_tokens": stats.prefix_cache.cacheable if stats.prefix_cache else 0,
                         "prompt_tokens_with_ids": stats.prefix_cache.tokens if stats.prefix_cache else 0,
                         "attainable_hit_rate": stats.prefix_cache.hit_rate if stats.prefix_cache else None},
        "first_errors": stats.first_errors,
        "tokens_in": stats.tokens_in,
        "tokens_out": stats.tokens_out,
        "seconds": round(seconds, 3),
        "judgments_per_second": round((stats.judged + sum(stats.failed.values())) / seconds, 3) if seconds else 0.0,
        "first_response_at": stats.first_response_at,
        "concurrency": stats.concurrency,
        "busy_seconds": {url: round(s, 3) for url, s in stats.busy_seconds.items()},
        "last_request_sent_at": stats.last_request_sent_at,
    }


@dataclass(frozen=True)
class Round:
    """One round of a run in rounds: the pairs it sends judgments for (their texts), exactly the judgments it
    asks of each, what the cache knew of them when the round was planned, and how its pairs were chosen."""

    pairs: list[PairText]
    wanted: dict[str, tuple[Slot, ...]]
    states: States
    how: str


DRAIN_LONGEST = 2.0  # a drain a budget reserves for, in the run's longest request so far (`run_judging`)
BUDGET_SPENT = "the GPU-hour budget: the next step would spend more than is left (a rerun with a larger one resumes)"


class RoundOutcome(NamedTuple):
    """What a round achieved once its verdicts were written (merged into its entry of the summary's `rounds`),
    and the next round; None, with why (`ended`), when the run is done."""

    achieved: dict[str, Any]
    next: Round | None
    ended: str | None = None


class Rounds(Protocol):
    """Decides a run's rounds after the first (which asks `Strategy.initial()` of every pending pair)."""

    def after(self, done: int) -> RoundOutcome:
        """Round `done` (0 the first) was written: what it achieved, and the next round."""
        ...


def _judge_in_rounds(first: Round, rounds: Rounds, send: Callable[[Round], None], stats: ClientStats,
                     stopped: Callable[[], bool] = lambda: False) -> tuple[list[dict[str, Any]], str | None]:
    """Send `first`, then each round `rounds` asks for, one after the other (`send` returns once the round's
    verdicts are written), until `stopped()` (a budget spent). Returns each round's entry and why the rounds
    ended."""
    entries: list[dict[str, Any]] = []
    current: Round | None = first
    ended = None
    while current is not None:
        sent, judged = stats.requests, stats.judged
        if current.pairs:
            send(current)
        outcome = rounds.after(len(entries))
        entries.append({"round": len(entries), "requests": stats.requests - sent, "judged": stats.judged - judged,
                        "pairs_asked": len(current.pairs), **outcome.achieved, "how": current.how})
        current, ended = outcome.next, outcome.ended
        if current is not None and stopped():
            current, ended = None, BUDGET_SPENT
    return entries, ended


def split_pending(ids: list[str], strategy: Strategy, states: States, max_attempts: int,
                  wanted: Wanted | None = None) -> tuple[list[str], Plan]:
    """(ids with work left, of the strategy's judgments or of those `wanted` names per pair; a plan counting
    what the cache answers for the others)."""
    planner, done, pending = Planner(strategy, states, max_attempts), Plan(), []
    for i in ids:
        counted = done.skipped_cached, done.exhausted
        if planner.slots(i, done, None if wanted is None else wanted[i]):  # planned again, counted again then
            pending.append(i)
            done.skipped_cached, done.exhausted = counted
            done.progress.pop(i, None)
    return pending, done


def _client_options(settings: Any, metrics: dict[str, str | None]) -> ClientOptions:
    """The client's options from the settings, its prefix cache's block as the servers' metrics say."""
    from tasks.judge.server_metrics import DEFAULT_BLOCK, block_size

    blocks = {b for text in metrics.values() if text and (b := block_size(text))}
    return ClientOptions(max_in_flight=settings.judge_max_in_flight, request_timeout=settings.judge_request_timeout,
                         max_retries=settings.judge_max_retries, max_reply_bytes=settings.judge_max_reply_bytes,
                         retry_after_max=settings.judge_retry_after_max,
                         prefix_block=min(blocks) if blocks else DEFAULT_BLOCK)


def run_judging(run: JudgeRun, pairs: list[PairText], states: States, done: Plan, write: Callable[[pa.Table], None],
                log: logging.Logger | logging.LoggerAdapter | None = None, rounds: Rounds | None = None,
                wanted: Wanted | None = None, budget: Budget | None = None) -> JudgeSummary:
    """Judge `pairs` (those with work left) as `run` says, or exactly the judgments `wanted` names per pair (one
    round of a run in rounds, decided elsewhere: a shard's); every result batch goes through `write` as a
    judgments table. Returns the summary, with what the cache answered (`done`) and the cost. With `rounds` (a
    strategy that judges in rounds), `pairs` get the first round (`Strategy.initial()`) and `rounds` decides
    each later one; the summary then says what each round sent (`rounds`) and why there was no further one
    (`rounds_ended`). With `budget`, the run sends no pair whose judgments would take what it spent, its requests
    out included, past it, and no round after that (`budget` in the summary says so)."""
    from tasks.judge.cost import cost_model, cost_report, measured_gpu_seconds
    from tasks.judge.limits import endpoint_limits, slot_gate
    from tasks.judge.server_metrics import run_metrics, snapshot

    settings, targets, config, strategy = run.settings, list(run.targets), run.config, run.strategy
    plan, stats = Plan(), ClientStats()
    seconds = 0.0  # judging, each round's (not the endpoints' check nor the decisions between rounds)
    sink = BatchedSink(lambda batch: write(results_table(batch, config.id, run.run_id)),
                       batch_size=settings.judge_write_batch)
    total = (None if rounds else len(pairs) * len(strategy.initial()) if wanted is None  # rounds: not known yet
             else sum(len(wanted[p.pair_id]) for p in pairs))
    # Nothing to send, nothing to gate: a rerun with every verdict cached never asks the Prefect API. The
    # endpoints' limits and metrics are read before the first request, whichever round sends it.
    limits: dict[str, int] = {}
    before: dict[str, str | None] | None = None
    options: ClientOptions | None = None

    def send(some: list[PairText], known: States, wanted: Wanted | None = None) -> None:
        nonlocal limits, before, options, seconds
        if before is None and some:
            limits = aio.run(endpoint_limits(targets))
            if limits:
                (log or _log).info("endpoint limits (Prefect global concurrency): %s", limits)
            before = snapshot(targets)
        if options is None:
            options = _budgeted(_client_options(settings, before or {}), settings.judge_input_budget)
        if budget is not None and budget.stopped:
            return
        began = time.perf_counter()
        try:
            _dispatch(some, endpoints=targets, config=config, strategy=strategy, options=options, states=known,
                      sink=sink, plan=plan, stats=stats, max_attempts=run.max_attempts,
                      on_progress=lambda n: progress.report(n, total, "judge"), gate=slot_gate(limits),
                      wanted=wanted, admit=None if budget is None else within)
        finally:
            seconds += time.perf_counter() - began

    def within(dispatcher: Dispatcher, asked: int) -> bool | None:
        """The budget, checked as each pair is about to go: what the run spent, its requests out included, and
        the pair's judgments (one dispatch: no batch waits for its slowest request before the next starts; only a
        pair that does not fit waits for what is out, `Budget.admits`)."""
        busy, back, out, longest = dispatcher.spending()
        gpus = settings.gpus_per_server
        # were the run to stop here, what is out drains for as long as its slowest request: twice the longest so far
        # (one slower than any before is what a tail is; on the stand-in, 3.1 s after 2.1 s over 790 requests)
        return budget.admits(busy * gpus, back, asked, out, drain=DRAIN_LONGEST * longest * gpus)

    def spent() -> float:  # this run's measured GPU-seconds so far
        return sum(stats.busy_seconds.values()) * settings.gpus_per_server

    if rounds is None:
        send(pairs, states, wanted)
    else:
        initial = tuple(strategy.initial())
        first = Round(pairs, first_round(strategy, pairs, states), states,
                      f"{slots_said(initial, strategy)} of every pair without it")
        entries, ended = _judge_in_rounds(first, rounds, lambda r: send(r.pairs, r.states, r.wanted), stats,
                                          stopped=lambda: budget is not None and budget.stopped)
    summary = _summary(len(pairs), plan, stats, seconds)
    summary["skipped_cached"] += done.skipped_cached
    summary["skipped_exhausted"] += done.exhausted
    summary["endpoint_limits"] = limits
    measured = run_metrics(before, snapshot(targets)) if before is not None else {"measured": False}
    measured["attainable_prefix_hit_rate"] = summary["prefix_reuse"]["attainable_hit_rate"]
    summary["server_metrics"] = measured
    summary["cost"] = cost_report(requests=summary["requests"], tokens_in=summary["tokens_in"],
                                  tokens_out=summary["tokens_out"], judge_seconds=summary["seconds"], kept=None,
                                  model=cost_model(settings), measured=measured)
    summary["cost"].update(measured_gpu_seconds(config.kind, summary["requests"], summary["busy_seconds"],
                                                settings.gpus_per_server, stats.busy_at_completion,
                                                stats.dispatches))
    if rounds is not None:
        summary["rounds"], summary["rounds_ended"] = entries, ended
    if budget is not None:
        summary["budget"] = budget.said(spent())
    return summary
