"""A Prefect global concurrency limit per endpoint caps requests over every run that uses the endpoint."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tasks.judge.limits import endpoint_limits, limit_name, set_endpoint_limit, slot_gate
from testing.genrm_standin import StandinConfig, StandinProcess
from tests.tasks.judge.test_run import _judge, _pairs

pytestmark = pytest.mark.prefect


def test_limit_names_are_stable_and_slash_free():
    assert limit_name("http://gpu-3:8000/v1") == "judge-endpoint-gpu-3-8000-v1"
    assert limit_name("http://gpu-3:8000/v1/") == limit_name("http://GPU-3:8000/v1")
    assert limit_name("https://judge.example.com/v1") == "judge-endpoint-judge-example-com-443-v1"
    assert "/" not in limit_name("http://10.0.0.7:5000/v1")


def _two_runs_at_once(url, gate):
    """Two judge runs side by side (as two flows would be), each allowed 16 requests in flight."""
    results = []

    def one(seed):
        results.append(_judge(url, _pairs(24, seed=seed), strategy="single", max_in_flight=16, gate=gate)[0])

    threads = [threading.Thread(target=one, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_a_limit_caps_requests_in_flight_over_two_runs():
    with StandinProcess(StandinConfig(capacity=64, latency_mean=0.2, latency_sigma=0.1)) as server:
        assert asyncio.run(endpoint_limits([server.url])) == {}
        assert slot_gate({}) is None  # no limit: no API call per request
        uncapped = _two_runs_at_once(server.url, None)
        peak_uncapped = server.stats()["peak_open"]
        server.reset_stats()

        asyncio.run(set_endpoint_limit(server.url, 4))
        limits = asyncio.run(endpoint_limits([server.url, "http://127.0.0.1:9/v1"]))
        assert limits == {server.url.rstrip("/"): 4}
        capped = _two_runs_at_once(server.url, slot_gate(limits))
        stats = server.stats()
    assert all(r["judged"] == 24 for r in uncapped + capped)
    assert peak_uncapped > 4  # without the limit the two runs together exceed it
    assert stats["requests"] == 48 and 1 <= stats["peak_open"] <= 4
