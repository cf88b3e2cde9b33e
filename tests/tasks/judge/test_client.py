"""The dispatcher in-process, against a fake transport (no server, no sockets): what it sends, how it
retries, what it counts. The same client is tested over real HTTP against the stand-in elsewhere."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import httpx2
import pytest

from tasks.judge.client import ClientOptions, Dispatcher, JudgeRequest
from tasks.judge.config import JudgeConfig
from tasks.judge.genrm import build_messages

HISTORY = [{"role": "user", "content": "which is better?"}]


def _completion(content: str, finish: str = "stop") -> dict:
    return {"model": "fake", "choices": [{"message": {"role": "assistant", "content": content},
                                          "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


class FakeServer:
    """Answers each request by a script keyed on the request's position; records every body."""

    def __init__(self, script):
        self.script = script
        self.bodies: list[dict] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        return self.script(len(self.bodies), body)


def _run(server: FakeServer, requests: list[JudgeRequest], **options) -> tuple[list, object]:
    results = []
    opts = ClientOptions(max_in_flight=4, backoff_base=0.001, backoff_max=0.002, cooldown=0.01,
                         http_client=lambda url: httpx2.AsyncClient(transport=httpx2.MockTransport(server.handler)),
                         **options)
    dispatcher = Dispatcher(["http://fake/v1"], JudgeConfig(), opts, lambda r: results.append(r) or [])
    stats = asyncio.run(dispatcher.run(requests))
    return results, stats


def _request(pair: str, order: str = "ab", sample: int = 0) -> JudgeRequest:
    return JudgeRequest(pair, order, sample, build_messages(HISTORY, "A", "B", order))


def test_a_verdict_is_parsed_and_the_request_is_the_genrm_layout_without_a_seed():
    server = FakeServer(lambda n, body: httpx2.Response(200, json=_completion(
        'thinking</think>{"score_1": 4, "score_2": 2, "ranking": 2}')))
    results, stats = _run(server, [_request("p1")])
    assert [r.status for r in results] == ["ok"] and results[0].side.margin == 1.5
    body = server.bodies[0]
    assert [m["role"] for m in body["messages"]] == ["user", "response_1", "response_2"]
    assert "seed" not in body and body["temperature"] == 0.6 and body["top_p"] == 0.95
    assert (stats.requests, stats.judged, stats.tokens_in) == (1, 1, 10)


def test_transport_failures_are_retried_and_never_count_as_attempts():
    server = FakeServer(lambda n, body: httpx2.Response(500 if n <= 2 else 200, json=_completion(
        'x</think>{"score_1": 4, "score_2": 2, "ranking": 2}')))
    results, stats = _run(server, [_request("p1")], max_retries=3)
    assert results[0].status == "ok" and results[0].request.requests == 3 and results[0].request.attempts == 1
    assert stats.transport_failures == Counter({"http_500": 2}) and stats.retries == 2


def test_an_unclosed_reasoning_is_a_failed_answer_and_further_samples_never_repeat_a_seed():
    server = FakeServer(lambda n, body: httpx2.Response(200, json=_completion(
        'still thinking {"score_1": 4, "score_2": 2, "ranking": 2}')))
    results, stats = _run(server, [_request("p1", sample=1), _request("p2", sample=2)])
    assert {r.failure_reason for r in results} == {"no_answer_after_reasoning"}
    assert stats.failed_answers == Counter({"no_answer_after_reasoning": 2})
    seeds = [b["seed"] for b in server.bodies]
    assert len(set(seeds)) == 2


@pytest.mark.parametrize("status,retried", [(400, False), (429, True)])
def test_client_errors_are_final_and_rate_limits_are_retried(status, retried):
    server = FakeServer(lambda n, body: httpx2.Response(status if n == 1 else 200, json=_completion(
        'x</think>{"score_1": 4, "score_2": 2, "ranking": 2}') if n > 1 else {"error": "no"}))
    results, _ = _run(server, [_request("p1")])
    assert (results[0].status == "ok") is retried
    assert len(server.bodies) == (2 if retried else 1)
