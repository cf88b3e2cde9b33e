"""The GenRM stand-in: pure verdict/latency/busy logic, then the HTTP server run as a subprocess."""

from __future__ import annotations

import asyncio
import json
import random
import re
import signal
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from openai import OpenAI

from testing.genrm_standin import (
    InvalidRequest,
    StandinConfig,
    StandinProcess,
    busy_fraction,
    draw_fault,
    latency_for,
    parse_chat_request,
    verdict_for,
)

REAL_MODEL = "nvidia/Qwen3-Nemotron-235B-A22B-GenRM"
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def request_messages(a: str, b: str, prompt: str = "Which is better?") -> list[dict[str, str]]:
    return [
        {"role": "user", "content": prompt},
        {"role": "response_1", "content": a},
        {"role": "response_2", "content": b},
    ]


def random_pairs(n: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    text = lambda: " ".join(rng.choices(WORDS, k=rng.randint(3, 12)))  # noqa: E731
    return [(text(), text()) for _ in range(n)]


def parse_verdict(content: str) -> dict | None:
    """A strict GenRM parse (docs/genrm-protocol.md#reading-a-verdict): the last JSON object with valid keys after
    the last </think>."""
    if "</think>" not in content:
        return None
    answer = content.rsplit("</think>", 1)[1]
    for candidate in reversed(re.findall(r"\{[^{}]*\}", answer)):
        try:
            obj = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if (
            {"score_1", "score_2", "ranking"} <= obj.keys()
            and 1 <= obj["score_1"] <= 5 and 1 <= obj["score_2"] <= 5 and 1 <= obj["ranking"] <= 6
        ):
            return obj
    return None


def body(messages: list[dict[str, str]], **extra) -> dict:
    return {"model": REAL_MODEL, "messages": messages, "temperature": 0.6, "top_p": 0.95, **extra}


# ---------------------------------------------------------------- pure logic


def test_verdict_and_latency_are_deterministic_from_content():
    config = StandinConfig()
    m = request_messages("short answer", "a longer, more careful answer")
    assert verdict_for(m, None, config) == verdict_for([dict(x) for x in m], None, config)
    assert latency_for(m, 3, config) == latency_for(m, 3, config)
    assert latency_for(m, 3, config) != latency_for(m, 4, config)


def test_swapped_order_mirrors_the_verdict_without_bias():
    config = StandinConfig(position_bias=0.0)
    for seed in (None, 0, 1):
        for a, b in random_pairs(200):
            if a == b:
                continue
            s1, s2, r = verdict_for(request_messages(a, b), seed, config)
            assert verdict_for(request_messages(b, a), seed, config) == (s2, s1, 7 - r)


def test_rankings_spread_and_scores_agree_with_the_ranking():
    config = StandinConfig()
    verdicts = [verdict_for(request_messages(a, b), None, config) for a, b in random_pairs(600)]
    counts = {r: sum(v.ranking == r for v in verdicts) for r in range(1, 7)}
    assert all(c >= 0.08 * len(verdicts) for c in counts.values()), counts
    for s1, s2, r in verdicts:
        assert 1 <= s1 <= 5 and 1 <= s2 <= 5
        assert (s1 >= s2) if r <= 3 else (s2 >= s1)


def test_seed_gives_slightly_different_samples():
    config = StandinConfig()
    pairs = random_pairs(300)
    first = [verdict_for(request_messages(a, b), 1, config).ranking for a, b in pairs]
    second = [verdict_for(request_messages(a, b), 2, config).ranking for a, b in pairs]
    changed = [abs(x - y) for x, y in zip(first, second) if x != y]
    assert 0 < len(changed) < 0.6 * len(pairs)
    assert max(changed) == 1


def test_position_bias_favours_the_first_shown_response():
    pairs = random_pairs(200)
    unbiased = [verdict_for(request_messages(a, b), None, StandinConfig()).ranking for a, b in pairs]
    biased = [verdict_for(request_messages(a, b), None, StandinConfig(position_bias=1.0)).ranking for a, b in pairs]
    assert statistics.mean(biased) < statistics.mean(unbiased) - 0.5
    assert sum(r <= 3 for r in biased) > sum(r <= 3 for r in unbiased)


def test_latency_is_lognormal_with_the_configured_mean():
    config = StandinConfig(latency_mean=0.2, latency_sigma=0.5)
    draws = [latency_for(request_messages(a, b, str(i)), None, config) for i, (a, b) in enumerate(random_pairs(3000))]
    assert statistics.mean(draws) == pytest.approx(0.2, rel=0.05)
    assert statistics.median(draws) < 0.2  # right-skewed
    assert latency_for(request_messages("a", "b"), None, StandinConfig(latency_mean=0.2, latency_sigma=0.0)) == (
        pytest.approx(0.2)
    )


def test_fault_draws_follow_the_rates():
    config = StandinConfig(error_rate=0.1, hang_rate=0.05, malformed_rate=0.2, truncated_rate=0.15)
    rng = random.Random(config.seed)
    draws = [draw_fault(rng, config) for _ in range(20000)]
    for kind, rate in (("error", 0.1), ("hang", 0.05), ("malformed", 0.2), ("truncated", 0.15), (None, 0.5)):
        assert draws.count(kind) / len(draws) == pytest.approx(rate, abs=0.015)


def test_config_rejects_impossible_rates():
    with pytest.raises(ValueError):
        StandinConfig(error_rate=0.6, malformed_rate=0.6)
    with pytest.raises(ValueError):
        StandinConfig(capacity=0)


def test_busy_fraction_clips_intervals_to_the_window():
    intervals = [(0.0, 2.0), (1.0, 3.0), (5.0, None)]
    assert busy_fraction(intervals, 1.0, 3.0, capacity=2, now=10.0) == (3.0, 0.75)
    assert busy_fraction(intervals, 5.0, 6.0, capacity=1, now=5.5) == (0.5, 0.5)  # open: counts until now
    assert busy_fraction(intervals, 3.0, 5.0, capacity=2, now=10.0) == (0.0, 0.0)
    assert busy_fraction(intervals, 4.0, 4.0, capacity=2, now=10.0) == (0.0, 0.0)


@pytest.mark.parametrize(
    "messages, message",
    [
        ([{"role": "user", "content": "q"}, {"role": "response_1", "content": "a"}], "response_2"),
        ([{"role": "assistant", "content": "q"}, {"role": "response_1", "content": "a"},
          {"role": "response_2", "content": "b"}], "last history turn"),
        ([{"role": "user", "content": "q"}, {"role": "response_2", "content": "b"},
          {"role": "response_1", "content": "a"}], "response_1"),
        ([{"role": "user", "content": "q"}, {"role": "tool", "content": "x"}, {"role": "user", "content": "q"},
          {"role": "response_1", "content": "a"}, {"role": "response_2", "content": "b"}], "tool"),
        ([{"role": "user", "content": "q"}, {"role": "system", "content": "s"}, {"role": "user", "content": "q"},
          {"role": "response_1", "content": "a"}, {"role": "response_2", "content": "b"}], "system"),
        ([{"role": "system", "content": "s"}, {"role": "response_1", "content": "a"},
          {"role": "response_2", "content": "b"}], "history"),
        ([{"role": "user", "content": ["parts"]}, {"role": "response_1", "content": "a"},
          {"role": "response_2", "content": "b"}], "string"),
        ([], "non-empty"),
    ],
)
def test_parse_rejects_bad_layouts(messages, message):
    with pytest.raises(InvalidRequest, match=message):
        parse_chat_request(json.dumps({"messages": messages}).encode())


def test_parse_accepts_the_genrm_layout_and_reads_sampling():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a0"}, {"role": "user", "content": "q2"},
                {"role": "response_1", "content": "a"}, {"role": "response_2", "content": "b"}]
    chat = parse_chat_request(json.dumps(body(messages, seed=5, max_tokens=16384)).encode())
    assert (chat.seed, chat.max_tokens, len(chat.messages)) == (5, 16384, 6)


# ---------------------------------------------------------------- server


@pytest.fixture(scope="module")
def standin():
    with StandinProcess(StandinConfig(latency_mean=0.01)) as process:
        yield process


def test_health_models_and_stats_say_simulated(standin):
    health = httpx.get(f"{standin.base}/health").json()
    assert health["status"] == "ok" and health["simulated"] is True
    models = httpx.get(f"{standin.url}/models").json()
    assert [m["id"] for m in models["data"]] == [StandinConfig().model]
    assert "SIMULATED" in models["data"][0]["id"]
    assert standin.stats()["simulated"] is True


def test_same_request_same_answer_over_http(standin):
    payload = body(request_messages("first answer", "second answer"), seed=11)
    replies = [httpx.post(f"{standin.url}/chat/completions", json=payload).json() for _ in range(2)]
    contents = [r["choices"][0]["message"]["content"] for r in replies]
    assert contents[0] == contents[1]
    expected = verdict_for(payload["messages"], 11, StandinConfig())
    assert tuple(parse_verdict(contents[0]).values()) == expected


@pytest.mark.parametrize(
    "payload",
    [
        body([{"role": "user", "content": "q"}, {"role": "response_1", "content": "a"}]),
        body([{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"},
              {"role": "response_1", "content": "a"}, {"role": "response_2", "content": "b"}]),
        body([{"role": "critic", "content": "q"}, {"role": "response_1", "content": "a"},
              {"role": "response_2", "content": "b"}]),
        body(request_messages("a", "b"), seed="seven"),
        body(request_messages("a", "b"), stream=True),
        body(request_messages("a", "b"), max_tokens=0),
        ["not", "an", "object"],
    ],
)
def test_bad_input_is_an_openai_style_400(standin, payload):
    reply = httpx.post(f"{standin.url}/chat/completions", json=payload)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == 400 and error["message"]


def test_invalid_json_is_a_400(standin):
    reply = httpx.post(f"{standin.url}/chat/completions", content=b"{not json")
    assert reply.status_code == 400


def test_openai_client_passes_custom_roles(standin):
    client = OpenAI(base_url=standin.url, api_key="x", max_retries=0, timeout=10)
    history = [{"role": "user", "content": "Explain recursion."}]
    completion = client.chat.completions.create(
        model=REAL_MODEL,
        messages=history + [{"role": "response_1", "content": "A function calling itself."},
                            {"role": "response_2", "content": "Recursion is recursion."}],
        temperature=0.6, top_p=0.95, max_tokens=16384,
    )
    assert "SIMULATED" in completion.model
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert parse_verdict(choice.message.content) is not None
    usage = completion.usage
    assert usage.prompt_tokens >= 1 and usage.completion_tokens >= 1
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_small_max_tokens_cuts_the_output(standin):
    reply = httpx.post(f"{standin.url}/chat/completions", json=body(request_messages("a", "b"), max_tokens=10)).json()
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "length"
    assert len(choice["message"]["content"]) <= 40 and reply["usage"]["completion_tokens"] <= 10


async def _post_all(url: str, payloads: list[dict], timeout: float = 10.0) -> list[httpx.Response]:
    async with httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=64)) as client:
        return await asyncio.gather(*(client.post(f"{url}/chat/completions", json=p) for p in payloads))


def test_capacity_bounds_concurrency_and_stats_measure_busy_time():
    config = StandinConfig(capacity=2, latency_mean=0.2, latency_sigma=0.0)
    with StandinProcess(config) as standin:
        payloads = [body(request_messages(f"a{i}", f"b{i}")) for i in range(6)]
        t0 = time.time()
        replies = asyncio.run(_post_all(standin.url, payloads))
        t1 = time.time()
        assert [r.status_code for r in replies] == [200] * 6
        assert 0.55 <= t1 - t0 < 1.1  # three rounds of two (0.6 s); unbounded would be 0.2 s, serial 1.2 s

        stats = standin.stats(start=t0, end=t1)
        assert (stats["requests"], stats["completed"], stats["by_status"]) == (6, 6, {"200": 6})
        assert (stats["in_flight"], stats["queued"], stats["capacity"]) == (0, 0, 2)
        assert stats["busy_seconds"] == pytest.approx(1.2, abs=0.05)
        # slot-busy seconds over capacity x window: about 1.2 / (2 x 0.6) with no overhead; a loaded client's
        # overhead widens the window, not the busy time
        assert stats["busy_fraction"] == pytest.approx(stats["busy_seconds"] / (2 * (t1 - t0)), rel=1e-3)
        assert stats["busy_fraction"] > 0.5
        assert t0 <= stats["first_request_at"] <= stats["last_request_at"] <= t1

        time.sleep(0.3)
        idle = standin.stats(start=t1 + 0.05, end=time.time())
        assert idle["busy_fraction"] < 0.05

        standin.reset_stats()
        reset = standin.stats()
        assert (reset["requests"], reset["by_status"], reset["busy_fraction"]) == (0, {}, 0.0)


def test_fault_rates_show_up_in_answers_and_stats():
    config = StandinConfig(latency_mean=0.0, error_rate=0.2, malformed_rate=0.2, truncated_rate=0.2,
                           unclosed_rate=0.2, seed=3)
    with StandinProcess(config) as standin:
        # The same request over and over: faults come from the stream, so retries can succeed.
        replies = asyncio.run(_post_all(standin.url, [body(request_messages("a", "b"))] * 400))
        kinds = []
        for reply in replies:
            if reply.status_code == 500:
                kinds.append("error")
                continue
            choice = reply.json()["choices"][0]
            content = choice["message"]["content"]
            if choice["finish_reason"] == "length":
                assert "</think>" not in content
                kinds.append("truncated")
            elif "</think>" not in content:  # stopped mid-reasoning, a draft verdict in it
                assert '"ranking"' in content
                kinds.append("unclosed")
            elif parse_verdict(content) is None:
                kinds.append("malformed")
            else:
                kinds.append("ok")
        for kind in ("error", "malformed", "truncated", "unclosed"):
            assert 50 <= kinds.count(kind) <= 110, (kind, kinds.count(kind))
        stats = standin.stats()
        assert stats["faults"] == {"error": kinds.count("error"), "hang": 0, "malformed": kinds.count("malformed"),
                                   "truncated": kinds.count("truncated"), "unclosed": kinds.count("unclosed")}
        assert stats["by_status"] == {"200": 400 - kinds.count("error"), "500": kinds.count("error")}


def _wait_for(standin: StandinProcess, key: str, value: int) -> dict:
    deadline = time.monotonic() + 5
    while (stats := standin.stats())[key] != value and time.monotonic() < deadline:
        time.sleep(0.05)
    return stats


def test_hang_frees_its_slot_when_the_client_gives_up():
    with StandinProcess(StandinConfig(hang_rate=1.0, capacity=1)) as standin:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{standin.url}/chat/completions", json=body(request_messages("a", "b")), timeout=0.5)
        stats = _wait_for(standin, "in_flight", 0)
        assert stats["in_flight"] == 0 and stats["by_status"] == {"499": 1} and stats["faults"]["hang"] == 1


def test_a_request_hanging_at_shutdown_is_released(capsys):
    standin = StandinProcess(StandinConfig(hang_rate=1.0))
    with ThreadPoolExecutor(1) as pool, standin:
        url = f"{standin.url}/chat/completions"
        hung = pool.submit(httpx.post, url, json=body(request_messages("a", "b")), timeout=30)
        assert _wait_for(standin, "in_flight", 1)["in_flight"] == 1
        t0 = time.monotonic()
    assert time.monotonic() - t0 < 2.0  # released at once, not after the graceful timeout
    assert standin.returncode == -signal.SIGTERM  # uvicorn re-raises the SIGTERM it handled: no SIGKILL
    assert hung.result().status_code == 503
    log = capsys.readouterr().err  # the child's stderr, forwarded by StandinProcess
    assert "verdicts are SIMULATED" in log and "Traceback" not in log


def test_hang_with_short_hang_seconds_answers_504():
    with StandinProcess(StandinConfig(hang_rate=1.0, hang_seconds=0.2)) as standin:
        reply = httpx.post(f"{standin.url}/chat/completions", json=body(request_messages("a", "b")), timeout=5)
        assert reply.status_code == 504
        assert "SIMULATED" in reply.json()["error"]["message"]


@pytest.mark.parametrize("kind", ["genrm", "reward-model"])
def test_a_client_gone_mid_request_is_answered_without_a_server_traceback(kind):
    """A command killed while it sent a request (the kill tests do it) leaves the body unfinished: the stand-in
    ends that request quietly, where Starlette would raise ClientDisconnect and uvicorn print its traceback."""
    from testing import genrm_standin, reward_model_standin

    app = (genrm_standin if kind == "genrm" else reward_model_standin).create_app()
    sent = []

    async def receive():
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/tokenize", "raw_path": b"/tokenize", "root_path": "", "query_string": b"", "headers": [],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))  # raised ClientDisconnect before
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 499
