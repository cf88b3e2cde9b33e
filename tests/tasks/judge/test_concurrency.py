"""The concurrency controller, as pure logic: it grows while the server has room, holds the batch plus a
small queue once it is full, never passes the hard cap, falls back to throughput without /metrics and goes
back to the gauges when they return."""

from __future__ import annotations

from tasks.judge.concurrency import START, Concurrency, parse_vllm_gauges

METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 12.0
vllm:num_requests_waiting{model_name="m"} 3.0
vllm:gpu_cache_usage_perc{model_name="m"} 0.5
"""


def test_gauges_are_read_from_prometheus_text():
    assert parse_vllm_gauges(METRICS) == (12.0, 3.0)
    two_models = METRICS + 'vllm:num_requests_running{model_name="n"} 1\nvllm:num_requests_waiting{model_name="n"} 0\n'
    assert parse_vllm_gauges(two_models) == (13.0, 3.0)
    assert parse_vllm_gauges("# nothing here\n") is None


def _simulate(capacity: int, hard_cap: int | None = None, steps: int = 40,
              c: Concurrency | None = None, start: float = 0.0) -> tuple[Concurrency, list[int]]:
    """A server of `capacity` slots and a client that always fills its cap: the queue after each reading."""
    c = c or Concurrency(hard_cap)
    queues = []
    for t in range(steps):
        in_flight = c.cap
        running, waiting = min(in_flight, capacity), max(0, in_flight - capacity)
        queues.append(waiting)
        c.on_gauges(running, waiting, in_flight, start + t)
    return c, queues


def test_it_finds_batches_of_every_size_with_a_small_queue():
    for capacity in (16, 64, 256, 1024):
        c, queues = _simulate(capacity)
        steady = queues[-10:]
        assert capacity <= c.cap <= capacity + max(1, round(0.05 * capacity)), (capacity, c.cap)
        assert max(queues) <= 0.25 * capacity + 8, (capacity, max(queues))  # an overshoot stays small
        assert sum(steady) / len(steady) <= 0.10 * capacity, (capacity, steady)
        assert min(steady) >= 1  # a positive queue: the batch never drains
        assert c.full_at is not None


def test_requests_the_server_does_not_show_yet_are_not_room_to_grow():
    """A loaded host: half of what we sent has not reached the server's batch yet. Growing on that reading
    would overshoot the batch once they arrive; the controller waits for the server to see them."""
    c = Concurrency(None)
    c.on_gauges(running=8, waiting=0, in_flight=8, now=0.0)
    grown = c.cap
    assert grown > START
    c.on_gauges(running=grown // 2, waiting=0, in_flight=grown, now=1.0)
    assert c.cap == grown
    c.on_gauges(running=grown, waiting=0, in_flight=grown, now=2.0)  # all arrived, still no queue: grow
    assert c.cap > grown


def test_the_hard_cap_is_never_passed():
    c, _ = _simulate(256, hard_cap=40)
    assert c.cap == c.peak == 40
    assert Concurrency(5, mode="fixed").cap == 5 and Concurrency(None).cap == START


def test_without_metrics_it_follows_observed_throughput():
    c = Concurrency(None)
    c.no_metrics(0.0)
    assert c.mode == "observed"
    capacity, latency, now = 24, 1.0, 0.0
    for _ in range(400):  # completions arrive at min(cap, capacity) per latency; queueing adds latency
        in_flight = c.cap
        rate = min(in_flight, capacity) / latency
        observed_latency = latency * max(1.0, in_flight / capacity)
        now += 1.0 / rate
        c.on_completion(observed_latency, in_flight, now)
    assert 0.8 * capacity <= c.cap <= 1.5 * capacity, c.cap


def _observe_a_queueing_server(c: Concurrency, capacity: int, start: float, completions: int = 400) -> float:
    """Observed mode against a server whose latency jumps as soon as anything queues: the cap backs off."""
    now = start
    for i in range(completions):
        latency = 1.0 if i < 40 else 3.0  # a server just back up: slow first requests (cold caches)
        now += latency / min(c.cap, capacity)
        c.on_completion(latency, c.cap, now)
    return now


def test_gauges_that_come_back_take_over_again_and_the_cap_recovers():
    """A restart: the gauges go away, observed mode backs the cap off, the gauges return. The cap the
    gauges had found comes back at once and settles on the batch again, as for a run without the restart."""
    c, _ = _simulate(64)
    found = c.cap
    assert 64 <= found <= 68
    c.no_metrics(40.0)
    now = _observe_a_queueing_server(c, 64, 40.0)
    assert c.mode == "observed" and c.cap < 0.8 * found, c.cap  # what the issue saw: it never recovered
    c.on_gauges(64, 0, c.cap, now)  # ignored in observed mode
    c.metrics_back(now)
    assert c.mode == "metrics" and c.cap == found
    _, queues = _simulate(64, c=c, start=now + 1)
    assert 64 <= c.cap <= 68 and min(queues[-10:]) >= 1
    assert [(mode, cap) for _, mode, cap in c.switches] == [("observed", found), ("metrics", found)]
    report = c.report(0.0)
    assert report["mode"] == "metrics" and [s["to"] for s in report["switches"]] == ["observed", "metrics"]
    assert report["switches"][0]["after_s"] == 40.0


def test_a_server_back_with_another_batch_size_is_found_again():
    for before, after in ((64, 24), (24, 256)):
        c, _ = _simulate(before)
        c.no_metrics(40.0)
        c.metrics_back(41.0)
        _, queues = _simulate(after, c=c, start=42.0)
        assert after <= c.cap <= after + max(1, round(0.05 * after)), (before, after, c.cap)
        assert max(queues[1:]) <= 0.25 * after + 8, (before, after, queues)  # the first reading is the old cap


def test_the_hard_cap_holds_across_mode_switches():
    c, _ = _simulate(256, hard_cap=40)
    c.no_metrics(40.0)
    _observe_a_queueing_server(c, 256, 40.0)
    c.metrics_back(100.0)
    _simulate(256, c=c, start=101.0)
    assert c.cap == c.peak == 40


def test_a_resumed_controller_keeps_its_cap_and_observed_mode_counts_afresh():
    """A run's later dispatch takes the controller as the last one left it: the cap and batch stay, and observed
    mode forgets the completions it counted before the pause (a window spanning it would read as a slow server)."""
    c, _ = _simulate(64)
    found, batch = c.cap, c.batch
    c.resume(100.0)
    assert (c.cap, c.batch, c.mode) == (found, batch, "metrics")
    c.no_metrics(101.0)
    c.on_completion(0.05, c.cap, 101.5)
    c.resume(500.0)
    assert (c._window_start, c._done, c._latency_sum) == (500.0, 0, 0.0) and c.cap == found
