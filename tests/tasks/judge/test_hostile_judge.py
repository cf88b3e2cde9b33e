"""The client against a hostile server over real HTTP: any reply of any shape or size ends as a verdict or a
failure with a precise reason, every other answer of the run is kept, and nothing waits forever."""

from __future__ import annotations

import asyncio
import time

import pytest

from tasks.judge.client import ClientOptions, Dispatcher, JudgeRequest
from tasks.judge.config import JudgeConfig
from tasks.judge.genrm import build_messages
from tasks.judge.replies import RAW_TEXT_LIMIT
from tests.tasks.judge.hostile_judge import HostileJudge

HISTORY = [{"role": "user", "content": "which is better?"}]

# What each reply kind must become
EXPECTED = {
    "ok": ("ok", None),
    "reasoning_null": ("ok", None),
    "deep_json": ("failed", "no_json"),
    "deep_json_object": ("failed", "no_json"),
    "unclosed_braces": ("failed", "no_json"),
    "content_number": ("failed", "bad_response:content"),
    "body_list": ("failed", "bad_response:body"),
    "choices_string": ("failed", "bad_response:choices"),
    "usage_string": ("failed", "bad_response:usage"),
    "not_json": ("failed", "bad_response:not_json"),
    "deep_body": ("failed", "bad_response:not_json"),
    "huge": ("failed", "too_large"),
    "huge_declared": ("failed", "too_large"),
    "huge_error": ("failed", "too_large"),
}


def _requests(n: int) -> list[JudgeRequest]:
    return [JudgeRequest(f"p{i}", "ab", 0, build_messages(HISTORY, "A", "B", "ab")) for i in range(n)]


def _judge(url: str, requests: list[JudgeRequest], **options):
    results = []
    opts = ClientOptions(**{"max_in_flight": 1, "adapt": False, "backoff_base": 0.01, "backoff_max": 0.02,
                            "metrics_poll": 0.05, **options})
    dispatcher = Dispatcher([url], JudgeConfig(), opts, lambda r: results.append(r) or [])
    stats = asyncio.run(dispatcher.run(requests))
    return results, stats


def test_every_reply_shape_is_a_verdict_or_a_named_failure_and_the_run_keeps_them_all():
    script = list(EXPECTED)
    with HostileJudge(script) as server:
        results, stats = _judge(server.url, _requests(len(script)))
        served = list(server.kinds_served)
    # one at a time: the i-th request got the i-th reply kind
    assert served == script and len(results) == len(script)
    by_pair = {r.request.pair_id: r for r in results}
    for i, kind in enumerate(script):
        r = by_pair[f"p{i}"]
        assert (r.status, r.failure_reason) == EXPECTED[kind], kind
        assert r.request.attempts == 1, kind  # each came back: it counts as an attempt, never retried in-run
        assert r.raw_text is None or len(r.raw_text) <= RAW_TEXT_LIMIT + 100, kind
    assert stats.judged == 2 and sum(stats.failed.values()) == len(script) - 2


def test_a_trickling_body_is_bounded_by_the_request_timeout():
    with HostileJudge(["trickle"]) as server:
        started = time.monotonic()
        results, stats = _judge(server.url, _requests(1), request_timeout=2.0, max_retries=1)
        elapsed = time.monotonic() - started
    assert [(r.status, r.failure_reason) for r in results] == [("failed", "timeout")]
    assert stats.transport_failures["timeout"] == 2  # the first try and its one retry
    assert elapsed < 8.0, elapsed


@pytest.mark.parametrize("kind,wait", [("rate_limited", 2.0), ("unavailable", 1.0)])
def test_retry_after_is_honoured_and_counted(kind, wait):
    with HostileJudge([kind, "ok"]) as server:
        results, stats = _judge(server.url, _requests(1))
        gap = server.times[1] - server.times[0]
    assert results[0].status == "ok" and stats.retry_after_waits == 1
    assert wait - 0.1 <= gap < wait + 1.5, gap


def test_retry_after_is_bounded_by_its_maximum():
    with HostileJudge(["rate_limited", "ok"]) as server:
        results, stats = _judge(server.url, _requests(1), retry_after_max=0.2)
        gap = server.times[1] - server.times[0]
    assert results[0].status == "ok" and stats.retry_after_waits == 1
    assert gap < 1.0, gap
