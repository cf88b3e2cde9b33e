"""Judging against the stand-in over real HTTP: throughput plumbing, faults, retries and resume."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest

from tasks.ingest.synth_rows import TextMaker
from tasks.judge.client import ClientOptions
from tasks.judge.config import JudgeConfig
from tasks.judge.run import JudgmentState, Plan, first_round, judge_pairs, plan_requests, planned_slots, split_pending
from tasks.judge.strategies import Strategy, both_orders, parse_strategy
from testing.genrm_standin import StandinConfig, StandinProcess
from warehouse.judging import PairText


def _pairs(n, seed=0):
    tm = TextMaker(seed)
    return [PairText(f"{seed:04x}{i:028x}", [{"role": "user", "content": tm.text(200)}], tm.text(300), tm.text(300))
            for i in range(n)]


def _states(results):
    """What the warehouse would hold after these results (the cache for the next run)."""
    states = {}
    for r in results:
        key = (r.request.pair_id, r.request.order, r.request.sample)
        side = r.side
        states[key] = JudgmentState(r.status, r.request.prior_attempts + r.request.attempts,
                                    side.margin if side else None, side.score_a if side else None,
                                    side.score_b if side else None, r.request.prior_requests + r.request.requests,
                                    r.failure_reason)
    return states


def _judge(url, pairs, strategy="swap", states=None, **opts):
    written = []
    options = ClientOptions(max_in_flight=opts.pop("max_in_flight", 16), request_timeout=opts.pop("timeout", 5.0),
                            max_retries=opts.pop("max_retries", 2), backoff_base=0.05, backoff_max=0.2, cooldown=0.2)
    summary = judge_pairs(pairs, endpoints=[url] if isinstance(url, str) else url, config=JudgeConfig(),
                          strategy=parse_strategy(strategy), options=options, states=states or {},
                          write=written.extend, sink_batch=8, **opts)
    return summary, written


def test_swap_judges_both_orders_and_maps_to_a_side():
    pairs = _pairs(20)
    with StandinProcess(StandinConfig(capacity=8, latency_mean=0.01)) as server:
        summary, results = _judge(server.url, pairs)
        stats = server.stats()
    assert summary["judged"] == 40 and summary["requests"] == 40 == stats["requests"]
    assert summary["tokens_in"] > 0 and summary["tokens_out"] > 0
    by_key = {(r.request.pair_id, r.request.order): r for r in results}
    for pair_id, *_ in pairs:
        ab, ba = by_key[(pair_id, "ab")], by_key[(pair_id, "ba")]
        # the stand-in has no position bias here: both orders agree once mapped to A's side
        assert ab.side.ranking_a == ba.side.ranking_a and ab.verdict.ranking == 7 - ba.verdict.ranking
        assert "SIMULATED" in ab.served_model


@pytest.mark.parametrize("strategy,per_pair", [("swap", 2), ("samples:2", 4)])
def test_faults_end_judged_or_failed_with_a_reason_and_a_clean_rerun_completes_exactly_those(strategy, per_pair):
    pairs = _pairs(60, seed=1)
    faulty = StandinConfig(capacity=16, latency_mean=0.01, error_rate=0.15, hang_rate=0.08, malformed_rate=0.05,
                           truncated_rate=0.02, seed=3)
    with StandinProcess(faulty) as server:
        first, results = _judge(server.url, pairs, strategy=strategy, timeout=1.0, max_retries=1)
        stats = server.stats()
    total = per_pair * len(pairs)
    assert len(results) == total  # every judgment ends with a result
    failed = [r for r in results if r.status == "failed"]
    assert failed and all(r.failure_reason for r in failed)
    reasons = Counter(r.failure_reason for r in failed)
    assert set(reasons) <= {"http_500", "timeout", "no_json", "truncated", "not_a_number", "out_of_range"}
    assert reasons["no_json"] + reasons["truncated"] > 0  # malformed answers are failures, not default scores
    assert first["requests"] > total  # transient failures were retried within the run
    # the summary tells answers that came back without a verdict from requests that never came back
    assert sum(first["failed_answers"].values()) == reasons["no_json"] + reasons["truncated"] + \
        reasons["not_a_number"] + reasons["out_of_range"]
    assert first["transport_failures"]["http_500"] >= reasons["http_500"] > 0
    failed_keys = {(r.request.pair_id, r.request.order, r.request.sample) for r in failed}

    with StandinProcess(StandinConfig(capacity=16, latency_mean=0.01)) as clean:
        # the attempt limit counts answers only: a judgment whose requests all timed out or got a 500
        # is never exhausted, however low the limit
        second, redo = _judge(clean.url, pairs, strategy=strategy, states=_states(results), max_attempts=1)
        clean_stats = clean.stats()
    transport_failed = {(r.request.pair_id, r.request.order, r.request.sample) for r in failed
                        if r.failure_reason in ("http_500", "timeout")}
    assert {(r.request.pair_id, r.request.order, r.request.sample) for r in redo} == transport_failed
    assert second["skipped_exhausted"] == len(failed_keys - transport_failed)
    assert second["skipped_cached"] == total - len(failed_keys) and all(r.status == "ok" for r in redo)
    assert second["requests"] == len(transport_failed)
    # no seeded request was ever sent twice, across retries within a run and across runs
    assert stats["seeded_repeats"] == clean_stats["seeded_repeats"] == 0
    if strategy == "samples:2":
        assert stats["seeded_requests"] > 0


def test_a_clean_rerun_resends_exactly_the_failed_judgments():
    pairs = _pairs(50, seed=5)
    faulty = StandinConfig(capacity=16, latency_mean=0.01, error_rate=0.15, hang_rate=0.08, malformed_rate=0.05, seed=4)
    with StandinProcess(faulty) as server:
        _, results = _judge(server.url, pairs, timeout=1.0, max_retries=1)
    failed_keys = {(r.request.pair_id, r.request.order, r.request.sample) for r in results if r.status == "failed"}
    assert failed_keys
    with StandinProcess(StandinConfig(capacity=16, latency_mean=0.01)) as clean:
        second, redo = _judge(clean.url, pairs, states=_states(results))
        assert clean.stats()["requests"] == len(failed_keys)
    assert {(r.request.pair_id, r.request.order, r.request.sample) for r in redo} == failed_keys


def test_an_answer_whose_reasoning_never_closed_is_no_verdict():
    pairs = _pairs(100, seed=6)
    with StandinProcess(StandinConfig(capacity=16, latency_mean=0.005, unclosed_rate=0.2, seed=2)) as server:
        summary, results = _judge(server.url, pairs, strategy="single")
        unclosed = server.stats()["faults"]["unclosed"]
    failed = [r for r in results if r.status == "failed"]
    assert 5 < unclosed == len(failed) and {r.failure_reason for r in failed} == {"no_answer_after_reasoning"}
    assert all("</think>" not in r.raw_text and '"ranking"' in r.raw_text for r in failed)  # a draft was there
    assert summary["failed_answers"] == {"no_answer_after_reasoning": unclosed}


def test_a_pair_over_the_input_budget_fails_with_a_reason_and_is_never_sent():
    pairs = _pairs(4, seed=7)
    long = pairs[0]._replace(response_a=pairs[0].response_a * 40)
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        summary, results = _judge(server.url, [long, *pairs[1:]], input_budget=2000)
        sent = server.stats()["requests"]
        again, rerun = _judge(server.url, [long], input_budget=2000, states=_states(results))
    refused = [r for r in results if r.request.pair_id == long[0]]
    assert {r.failure_reason for r in refused} == {"over_budget"} and len(refused) == 2
    assert sent == 6 and summary["over_budget"] == 1 and summary["judged"] == 6
    assert rerun == [] and again["requests"] == 0  # recorded once, never sent


def test_failures_stop_being_retried_at_the_attempt_limit():
    pairs = _pairs(5, seed=2)
    with StandinProcess(StandinConfig(latency_mean=0.01, malformed_rate=1.0)) as server:
        _, first = _judge(server.url, pairs, strategy="single", max_attempts=2)
        states = _states(first)
        _, second = _judge(server.url, pairs, strategy="single", states=states, max_attempts=2)
        summary, third = _judge(server.url, pairs, strategy="single", states=_states(second), max_attempts=2)
    assert len(first) == len(second) == 5 and third == [] and summary["skipped_exhausted"] == 5


def test_bad_request_is_not_retried():
    pairs = [PairText("0" * 32, [{"role": "user", "content": "q"}], "a", "b")]
    with StandinProcess(StandinConfig(latency_mean=0.01)) as server:
        # a history that ends with an assistant turn is refused by the server with a 400
        bad = [PairText("1" * 32, [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"}], "a", "b")]
        from tasks.judge import run as run_mod

        real = run_mod.build_messages
        run_mod.build_messages = lambda h, a, b, o: h + [{"role": "response_1", "content": a}, {"role": "response_2", "content": b}]
        try:
            summary, results = _judge(server.url, bad, strategy="single")
        finally:
            run_mod.build_messages = real
        ok_summary, _ = _judge(server.url, pairs, strategy="single")
    assert summary["failed"] == {"http_400": 1} and summary["requests"] == 1
    assert ok_summary["judged"] == 1


def test_adaptive_asks_for_more_only_on_borderline_pairs():
    pairs = _pairs(80, seed=4)
    with StandinProcess(StandinConfig(capacity=16, latency_mean=0.005)) as server:
        swap, _ = _judge(server.url, pairs, strategy="swap")
        adaptive, results = _judge(server.url, pairs, strategy="adaptive:2")
    firsts = {r.request.pair_id: r for r in results if (r.request.order, r.request.sample) == ("ab", 0)}
    extra = Counter(r.request.pair_id for r in results if (r.request.order, r.request.sample) != ("ab", 0))
    for pair_id, first in firsts.items():
        borderline = abs(first.side.margin) <= 1.0 or not (first.side.score_a == first.side.score_b or
                                                           (first.side.score_a > first.side.score_b) == (first.side.margin > 0))
        assert extra[pair_id] == (3 if borderline else 0)
    assert adaptive["requests"] < swap["requests"]


def test_a_dead_endpoint_is_set_aside_and_work_goes_to_the_live_one():
    pairs = _pairs(30, seed=5)
    with StandinProcess(StandinConfig(capacity=8, latency_mean=0.01)) as live:
        dead = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
        summary, results = _judge([dead, live.url], pairs, strategy="swap", max_retries=6)
    assert summary["judged"] == 60 and all(r.endpoint == live.url.rstrip("/") for r in results)
    assert summary["requests"] - 60 < 30  # the dead endpoint was tried, then set aside


def test_a_sink_that_cannot_write_stops_the_run_loudly():
    pairs = _pairs(10, seed=6)

    def broken(batch):
        raise OSError("disk full")

    options = ClientOptions(max_in_flight=4, request_timeout=5.0)
    with StandinProcess(StandinConfig(latency_mean=0.01)) as server:
        with pytest.raises(OSError, match="disk full"):
            judge_pairs(pairs, endpoints=[server.url], config=JudgeConfig(), strategy=parse_strategy("single"),
                        options=options, states={}, write=broken, sink_batch=2)


def test_a_sole_dead_endpoint_ends_the_run_clearly_without_spinning():
    """Connection refused on every request: the run stops after a few cool-downs with the reason, and it
    waits out each cool-down asleep (a waiting loop must not burn the CPU)."""
    import resource
    import time

    from tasks.judge.client import EndpointsDownError

    options = ClientOptions(max_in_flight=8, request_timeout=2.0, max_retries=2, backoff_base=0.05, backoff_max=0.1,
                            cooldown=0.3, give_up_after=3)
    written = []
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    with pytest.raises(EndpointsDownError, match=r"127\.0\.0\.1:9/v1: 3 cool-downs in a row, last connection_error"):
        judge_pairs(_pairs(40, seed=7), endpoints=["http://127.0.0.1:9/v1"], config=JudgeConfig(),
                    strategy=parse_strategy("swap"), options=options, states={}, write=written.extend, sink_batch=4)
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - started
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert 0.3 + 0.6 <= wall < 30 and cpu < 0.5 * wall, (wall, cpu)
    # what was answered (failed for good after its retries) was written, not lost
    assert all(r.status == "failed" and r.failure_reason == "connection_error" for r in written)


def test_without_max_in_flight_the_client_finds_the_servers_batch_from_its_metrics():
    pairs = _pairs(200, seed=8)
    options = ClientOptions(request_timeout=10.0)
    with StandinProcess(StandinConfig(capacity=24, latency_mean=0.15)) as server:
        summary = judge_pairs(pairs, endpoints=[server.url], config=JudgeConfig(), strategy=parse_strategy("swap"),
                              options=options, states={}, write=lambda batch: None)
        stats = server.stats()
    found = summary["concurrency"][server.url]
    # it found the batch (24) and keeps only a small queue above it, even on a loaded machine
    assert found["mode"] == "metrics" and 24 <= found["final"] <= 30 and found["batch_full_after_s"] is not None
    assert stats["waiting_max"] <= 0.25 * 24 + 8 and summary["judged"] == 400


def test_a_later_dispatch_of_the_run_starts_at_the_cap_the_first_one_found():
    """A run in rounds, or within a budget, dispatches again and again: each later dispatch starts at the cap and
    batch the run found, not at START (a round of a few hundred requests would spend its life ramping up)."""
    import asyncio

    from tasks.judge.client import ClientStats, Dispatcher
    from tasks.judge.concurrency import START
    from tasks.judge.run import plan_requests

    pairs = _pairs(120, seed=8)
    stats = ClientStats()
    with StandinProcess(StandinConfig(capacity=24, latency_mean=0.15)) as server:
        first = Dispatcher([server.url], JudgeConfig(), ClientOptions(request_timeout=10.0), lambda r: [],
                           stats=stats)
        asyncio.run(first.run(plan_requests(pairs[:60], parse_strategy("swap"), {}, 3, Plan())))
        found = stats.controllers[server.url].cap
        later = Dispatcher([server.url + "/"], JudgeConfig(), ClientOptions(request_timeout=10.0), lambda r: [],
                           stats=stats)
        assert later.endpoints[0].concurrency is stats.controllers[server.url]
        assert later.endpoints[0].concurrency.cap == found >= 24 > START
        asyncio.run(later.run(plan_requests(pairs[60:], parse_strategy("swap"), {}, 3, Plan())))
        assert server.stats()["waiting_max"] <= 0.25 * 24 + 8
    assert stats.requests == 240 and stats.dispatches == 2
    report = stats.concurrency[server.url]
    assert report["batch_full_after_s"] is not None and report["batch_full_after_s"] >= 0


def test_a_server_without_metrics_is_judged_by_observed_throughput():
    import httpx2

    pairs = _pairs(60, seed=9)

    def no_metrics(url):  # every GET /metrics answers 404, as a server without Prometheus would
        async def handler(request):
            if request.url.path.endswith("/metrics"):
                return httpx2.Response(404)
            async with httpx2.AsyncClient() as real:
                return await real.send(httpx2.Request(request.method, request.url, headers=request.headers,
                                                      content=request.content))
        return httpx2.AsyncClient(transport=httpx2.MockTransport(handler), timeout=10.0)

    with StandinProcess(StandinConfig(capacity=8, latency_mean=0.05)) as server:
        summary = judge_pairs(pairs, endpoints=[server.url], config=JudgeConfig(), strategy=parse_strategy("swap"),
                              options=ClientOptions(request_timeout=10.0, http_client=no_metrics), states={},
                              write=lambda batch: None)
    assert summary["concurrency"][server.url]["mode"] == "observed" and summary["judged"] == 120


def test_a_restarted_server_gets_its_gauges_read_again_and_the_cap_recovers():
    """The stand-in is stopped mid-run and started again on its port: its /metrics goes away and comes back.
    The endpoint falls back to observed throughput while the gauges are missing and returns to them once
    the server answers, ending on the batch as a run without the restart does; nothing is lost."""
    import threading
    import time

    config = StandinConfig(capacity=24, latency_mean=0.1)
    options = ClientOptions(request_timeout=10.0, max_retries=30, backoff_base=0.05, backoff_max=0.5, cooldown=0.3,
                            give_up_after=30)
    first = StandinProcess(config).__enter__()
    servers = [first]

    def restart():
        while first.stats()["completed"] < 150:
            time.sleep(0.05)
        first.__exit__(None, None, None)
        time.sleep(0.5)  # long enough for three missed readings
        servers.append(StandinProcess(config, port=first.port).__enter__())

    restarter = threading.Thread(target=restart)
    restarter.start()
    try:
        results = []
        summary = judge_pairs(_pairs(800, seed=12), endpoints=[first.url], config=JudgeConfig(),
                              strategy=parse_strategy("swap"), options=options, states={}, write=results.extend)
    finally:
        restarter.join()
        servers[-1].__exit__(None, None, None)
    found = summary["concurrency"][first.url]
    assert len(servers) == 2 and [s["to"] for s in found["switches"]] == ["observed", "metrics"], found
    assert found["mode"] == "metrics" and 24 <= found["final"] <= 30, found
    assert summary["judged"] == 1600 and {r.status for r in results} == {"ok"}


@dataclass(frozen=True)
class UntilOrdersAgree(Strategy):
    """A strategy the run loop has never heard of: both orders, and while they disagree another sample of
    each, up to `samples`; its follow-ups depend on two verdicts, and on verdicts that were follow-ups."""

    samples: int = 3
    usage = "until-agree[:K]"
    takes_k = True
    one_order_on_purpose = False
    label = "until-agree"

    def initial(self):
        return both_orders(1)

    def all_slots(self):
        return both_orders(self.samples)

    def follow_ups(self, verdicts):
        i = 0
        while ("ab", i) in verdicts and ("ba", i) in verdicts:
            ab, ba = verdicts[("ab", i)], verdicts[("ba", i)]
            if ab is None or ba is None or (ab.margin > 0) == (ba.margin > 0):
                return []
            i += 1
        return both_orders(self.samples)[2 * i:2 * i + 2] if 0 < i < self.samples else []


def test_the_planner_follows_cached_verdicts_through_any_strategy():
    ok = lambda margin: JudgmentState("ok", 1, margin, 4, 2)  # noqa: E731
    states = {("p", "ab", 0): ok(1.5), ("p", "ba", 0): ok(-1.5),  # round 0 disagrees: round 1 is owed
              ("p", "ab", 1): ok(1.5), ("p", "ba", 1): ok(-0.5),  # and disagrees again: round 2 is owed
              ("p", "ab", 2): JudgmentState("failed", 3, None, None, None),  # exhausted
              ("q", "ab", 0): ok(1.5), ("q", "ba", 0): ok(0.5)}  # agrees: done
    plan = Plan()
    assert planned_slots("p", UntilOrdersAgree(), states, 3, plan) == [("ba", 2, None)]
    assert planned_slots("q", UntilOrdersAgree(), states, 3, plan) == []
    assert (plan.skipped_cached, plan.exhausted) == (6, 1)


def test_a_strategy_that_judges_one_order_first_shows_each_pair_its_shorter_answer_first():
    """`certify` and `adaptive` ask a pair's first order (`first_order`): `ba 0` where answer A is the longer,
    `ab 0` otherwise, and the order a pair was already tried in where it was tried in one; `swap` and `single` ask
    as written. What the planner sends is what the first round asks."""
    tm = TextMaker(3)
    longer_a = PairText("a-longer", [{"role": "user", "content": "q"}], tm.text(300), tm.text(100))
    longer_b = PairText("b-longer", [{"role": "user", "content": "q"}], tm.text(100), tm.text(300))
    tried = PairText("tried-ab", [{"role": "user", "content": "q"}], tm.text(300), tm.text(100))
    pairs = [longer_a, longer_b, tried]
    states = {("tried-ab", "ab", 0): JudgmentState("failed", 1, None, None, None)}  # a retry owed, in its order
    for name, firsts in (("certify", ["ba", "ab", "ab"]), ("adaptive", ["ba", "ab", "ab"]),
                         ("single", ["ab", "ab", "ab"]), ("swap", None)):
        strategy = parse_strategy(name)
        sent = [(r.pair_id, r.order, r.sample) for r in plan_requests(pairs, strategy, states, 3, Plan())]
        if firsts is None:
            assert sent == [(p.pair_id, o, 0) for p in pairs for o in ("ab", "ba")], name
            continue
        assert sent == [(p.pair_id, o, 0) for p, o in zip(pairs, firsts)], name
        assert first_round(strategy, pairs, states) == {p.pair_id: ((o, 0),) for p, o in zip(pairs, firsts)}, name
    # the request shows the shorter answer (here B) first, as response_1
    (request,) = plan_requests([longer_a], parse_strategy("certify"), {}, 3, Plan())
    assert [m["role"] for m in request.messages[-2:]] == ["response_1", "response_2"]
    assert (request.messages[-2]["content"], request.messages[-1]["content"]) == (longer_a.response_b,
                                                                                  longer_a.response_a)


def test_splitting_the_queue_counts_the_cache_of_finished_pairs_only():
    """The run plans a pending pair again and counts its cached verdicts then: counted here too, they would
    count twice. Any strategy: fixed, following up, one the planner has never heard of."""
    ok = lambda margin: JudgmentState("ok", 1, margin, 4, 2)  # noqa: E731
    failed = lambda attempts: JudgmentState("failed", attempts, None, None, None)  # noqa: E731
    states = {("done", "ab", 0): ok(2.5), ("done", "ba", 0): ok(2.5),  # decisive, orders agree: nothing follows
              ("half", "ab", 0): ok(2.5), ("half", "ba", 0): failed(1),  # a retry owed
              ("gone", "ab", 0): failed(3), ("gone", "ba", 0): ok(2.0),  # exhausted: nothing to ask
              ("fresh", "ab", 9): ok(1.0)}  # a slot no strategy here asks for
    ids = ["done", "half", "gone", "fresh"]
    for strategy, pending, cached, exhausted in ((parse_strategy("swap"), ["half", "fresh"], 3, 1),
                                                 (parse_strategy("single"), ["fresh"], 2, 1),
                                                 (parse_strategy("adaptive"), ["fresh"], 2, 1),
                                                 (UntilOrdersAgree(), ["half", "fresh"], 3, 1)):
        got, done = split_pending(ids, strategy, states, 3)
        assert got == pending and (done.skipped_cached, done.exhausted) == (cached, exhausted), strategy.label
        assert not set(done.progress) & set(pending), strategy.label
        # the same counts as planning each finished pair alone
        alone = Plan()
        for pair_id in set(ids) - set(pending):
            assert planned_slots(pair_id, strategy, states, 3, alone) == []
        assert (alone.skipped_cached, alone.exhausted) == (cached, exhausted), strategy.label


def test_the_run_loop_sends_the_follow_ups_of_any_strategy_once():
    pairs = _pairs(60, seed=8)
    options = ClientOptions(max_in_flight=8, request_timeout=5.0)
    results = []
    with StandinProcess(StandinConfig(capacity=8, latency_mean=0.005, position_bias=0.5)) as server:
        summary = judge_pairs(pairs, endpoints=[server.url], config=JudgeConfig(), strategy=UntilOrdersAgree(),
                              options=options, states={}, write=results.extend, sink_batch=8)
    by_pair = {}
    for r in results:
        by_pair.setdefault(r.request.pair_id, {})[(r.request.order, r.request.sample)] = r.side
    assert len(results) == summary["requests"] == len({(r.request.pair_id, r.request.order, r.request.sample)
                                                        for r in results})  # nothing asked twice
    rounds = Counter()
    for verdicts in by_pair.values():
        asked = set(verdicts)
        expected = set(both_orders(1))  # what the strategy calls for, given the verdicts that came back
        while more := UntilOrdersAgree().follow_ups({s: verdicts[s] for s in expected}):
            expected |= set(more)
        assert asked == expected
        rounds[len(asked) // 2] += 1
    assert rounds[1] and rounds[2]  # some pairs agreed at once, some were asked again


def test_rounds_end_at_the_budget_once_a_round_stopped_on_it():
    from tasks.judge.client import ClientStats
    from tasks.judge.run import BUDGET_SPENT, Round, RoundOutcome, _judge_in_rounds

    class TwoMore:
        def after(self, done: int) -> RoundOutcome:
            return RoundOutcome({"certified": 0}, Round([object()], {}, {}, "next") if done < 2 else None, "done")

    sent = []
    first = Round([object()], {}, {}, "first")
    entries, ended = _judge_in_rounds(first, TwoMore(), sent.append, ClientStats(), stopped=lambda: bool(sent))
    assert len(sent) == 1 and len(entries) == 1 and ended == BUDGET_SPENT  # no round after the stop
    sent.clear()
    entries, ended = _judge_in_rounds(first, TwoMore(), sent.append, ClientStats())
    assert len(sent) == 3 and ended == "done"  # without a budget, every round


class Stop(BaseException):
    """What a signal handler that raises (Prefect's SIGTERM bridge) raises: a BaseException."""


def _proxied(seen, client_class=None):
    """An `http_client` factory whose clients pass each request on to the stand-in, after `seen(request, client)`."""
    import httpx2

    def make(url):
        async def handler(request):
            seen(request, client)
            async with httpx2.AsyncClient() as real:
                return await real.send(httpx2.Request(request.method, request.url, headers=request.headers,
                                                      content=request.content))
        client = (client_class or httpx2.AsyncClient)(transport=httpx2.MockTransport(handler), timeout=10.0)
        return client
    return make


def _judged_until_stopped(pairs: int, seed: int, latency: float, http_client) -> list:
    """Judge `pairs` pairs (swap) against the stand-in through `http_client`; the run must end in `Stop`. What it
    wrote is returned."""
    written = []
    with StandinProcess(StandinConfig(capacity=4, latency_mean=latency)) as server:
        with pytest.raises(Stop):
            judge_pairs(_pairs(pairs, seed=seed), endpoints=[server.url], config=JudgeConfig(),
                        strategy=parse_strategy("swap"),
                        options=ClientOptions(request_timeout=10.0, http_client=http_client),
                        states={}, write=written.extend, sink_batch=4)
    return written


def _stopped_on_the_third(path_end: str, stop) -> list:
    """60 pairs judged through a proxy that calls `stop()` on the third request whose path ends in `path_end`; the
    run must end in `Stop`, mid-run. What it wrote is returned."""
    hits = []

    def seen(request, client):
        if request.url.path.endswith(path_end):
            hits.append(1)
            if len(hits) == 3:
                stop()

    return _judged_until_stopped(60, 21, 0.2, _proxied(seen))


def _raise_stop() -> None:
    raise Stop("SIGTERM")


def test_a_stop_signal_that_lands_in_the_metrics_watcher_stops_the_run():
    """A signal handler that raises interrupts whichever coroutine runs; asyncio keeps that exception in its task.
    Landing in the /metrics watcher, it must stop the run, not vanish while the run judges on."""
    assert len(_stopped_on_the_third("/metrics", _raise_stop)) < 120  # mid-run, keeping what came back before


def test_a_stop_signal_that_lands_in_one_of_the_loops_callbacks_stops_the_run():
    """The same signal landing while the loop runs a plain callback (a socket read, a timer): asyncio logs a
    BaseException a callback raises and goes on, so the run would judge every pair and the flow build its version
    on a SIGTERM (`common/aio.py`)."""
    import asyncio

    def in_a_callback() -> None:
        asyncio.get_running_loop().call_soon(_raise_stop)

    assert len(_stopped_on_the_third("/chat/completions", in_a_callback)) < 120


def test_a_stop_signal_that_lands_as_the_metrics_watcher_closes_stops_the_run():
    """At a dispatch's end its watchers are cancelled and gathered with their exceptions returned: a signal landing
    while one closes its HTTP client would be one of those returned, and the run would go on to its next round."""
    import httpx2

    class ClosingStops(httpx2.AsyncClient):
        watched = False

        async def aclose(self) -> None:
            await super().aclose()
            if self.watched:
                raise Stop("SIGTERM")

    def seen(request, client):
        if request.url.path.endswith("/metrics"):
            client.watched = True

    assert _judged_until_stopped(20, 23, 0.05, _proxied(seen, ClosingStops))  # the verdicts that came back are kept
