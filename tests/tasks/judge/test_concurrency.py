"""The concurrency controller, as pure logic: it grows while the server has room, holds the batch plus a
small queue once it is full, never passes the hard cap, and falls back to throughput without /metrics."""

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


def _simulate(capacity: int, hard_cap: int | None = None, steps: int = 40) -> tuple[Concurrency, list[int]]:
    """A server of `capacity` slots and a client that always fills its cap: the queue after each reading."""
    c = Concurrency(hard_cap)
    queues = []
    for t in range(steps):
        in_flight = c.cap
        running, waiting = min(in_flight, capacity), max(0, in_flight - capacity)
        queues.append(waiting)
        c.on_gauges(running, waiting, in_flight, float(t))
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
