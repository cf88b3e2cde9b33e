"""The tiny GenRM behind the real vLLM OpenAI server (CPU build): the GenRM protocol end to end.

The first tests need only the templates and the verdict rule; the rest need the vLLM venv
(CURATE_TEST_VLLM_PYTHON, set by .ci/run) and skip without it. Those share one server for the session
(30-70 s to start on 2 cores) and one with a reasoning parser, stopped after its test.
"""

from __future__ import annotations

import itertools
import random
import re

import httpx
import pytest
from openai import OpenAI

from common.settings import JUDGE_MODEL
from tasks.judge.endpoints import check_endpoints
from tasks.judge.genrm import Verdict, build_messages, parse_completion, to_a_side
from testing.tiny_genrm import (
    DROP_ROLES_TEMPLATE,
    GENRM_TEMPLATE,
    QUALITY_WORDS,
    expected_verdict,
    genrm_messages,
    render,
    synthetic_pair,
    synthetic_response,
)
from tests.real_vllm import VllmServerSpec

HISTORY = [{"role": "user", "content": "How do I fix a lamp?"},
           {"role": "assistant", "content": "Which lamp?"},
           {"role": "user", "content": "The one in the garden."}]
FIRST = "A great answer. First check the lamp and then fix it slowly."
SECOND = "A wrong answer. Paint the garden."


def unseen_pairs(count: int, seed: int = 99) -> list[tuple[list[dict[str, str]], str, str]]:
    """Pairs drawn like the training pairs but from another seed (the build trained on seed 20240521)."""
    rng = random.Random(seed)
    return [synthetic_pair(rng) for _ in range(count)]


def shown(pair, order: str) -> tuple[str, str]:
    _, a, b = pair
    return (a, b) if order == "ab" else (b, a)


# --- the templates and the rule (no vLLM needed) -------------------------------------------------------

def test_genrm_template_renders_the_history_and_both_response_roles_then_opens_thinking():
    prompt = render(genrm_messages(HISTORY, FIRST, SECOND))
    assert prompt.index("<|im_start|>user\nHow do I fix a lamp?") < prompt.index("<|im_start|>assistant\nWhich lamp?")
    first = prompt.index(f"<|im_start|>response_1\n{FIRST}<|im_end|>")
    assert first < prompt.index(f"<|im_start|>response_2\n{SECOND}<|im_end|>")
    assert prompt.endswith("<|im_start|>assistant\n<think>\n")


def test_drop_roles_template_silently_loses_both_responses():
    prompt = render(genrm_messages(HISTORY, FIRST, SECOND), DROP_ROLES_TEMPLATE)
    assert FIRST not in prompt and SECOND not in prompt and "response_" not in prompt
    assert "The one in the garden." in prompt and prompt.endswith("<think>\n")
    # so the two orders of a pair are one and the same prompt
    assert prompt == render(genrm_messages(HISTORY, SECOND, FIRST), DROP_ROLES_TEMPLATE)


def test_the_rule_is_consistent_when_the_order_is_swapped():
    rng = random.Random(1)
    for w1, w2 in itertools.permutations(QUALITY_WORDS, 2):
        r1, r2 = synthetic_response(rng, w1), synthetic_response(rng, w2)
        s1, s2, ranking = expected_verdict(r1, r2)
        assert (s1, s2) == (QUALITY_WORDS[w1], QUALITY_WORDS[w2])
        assert expected_verdict(r2, r1) == (s2, s1, 7 - ranking)
        assert (ranking <= 3) == (s1 > s2)
    assert expected_verdict("no quality word here", r2) is None


# --- the real server ---------------------------------------------------------------------------------

def openai_client(server) -> OpenAI:
    return OpenAI(base_url=server.url, api_key="EMPTY", max_retries=0, timeout=120)


def tokenize(server, messages, **extra) -> dict:
    body = {"model": server.model, "messages": messages, **extra}
    response = httpx.post(f"{server.root_url}/tokenize", json=body, timeout=60)
    response.raise_for_status()
    return response.json()


def detokenize(server, tokens: list[int]) -> str:
    response = httpx.post(f"{server.root_url}/detokenize", json={"model": server.model, "tokens": tokens}, timeout=60)
    response.raise_for_status()
    return response.json()["prompt"]


def metric(text: str, name: str) -> float:
    """The sum of a Prometheus metric over its label sets."""
    values = re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+-]+)$", text, re.M)
    assert values, f"{name} not in /metrics"
    return sum(float(v) for v in values)


@pytest.mark.vllm
def test_models_reports_the_judge_name_and_max_model_len(tiny_genrm_server):
    models = httpx.get(f"{tiny_genrm_server.url}/models", timeout=30).json()["data"]
    # `root`: vLLM's --model as given, whatever --served-model-name says
    assert [(m["id"], m["max_model_len"], m["root"]) for m in models] == [
        (JUDGE_MODEL, 4096, str(tiny_genrm_server.model_dir))]
    # the project's own check takes it for the configured judge's name, a real server, and other weights
    report = check_endpoints([tiny_genrm_server.url], JUDGE_MODEL, timeout=10)
    assert report.usable == [tiny_genrm_server.url] and report.simulated is False
    assert report.weights == str(tiny_genrm_server.model_dir)


@pytest.mark.vllm
def test_tokenize_renders_the_genrm_template_exactly_as_it_renders_here(tiny_genrm_server):
    messages = build_messages(HISTORY, FIRST, SECOND, "ab")
    tokenized = tokenize(tiny_genrm_server, messages)
    assert tokenized["count"] == len(tokenized["tokens"]) > 0
    assert tokenized["max_model_len"] == 4096
    prompt = detokenize(tiny_genrm_server, tokenized["tokens"])
    assert FIRST in prompt and SECOND in prompt
    assert prompt == render(messages, GENRM_TEMPLATE)


@pytest.mark.vllm
def test_a_template_that_drops_the_response_roles_gives_a_prompt_about_nothing(tiny_genrm_server):
    ab, ba = (build_messages(HISTORY, FIRST, SECOND, order) for order in ("ab", "ba"))
    dropped_ab = tokenize(tiny_genrm_server, ab, chat_template=DROP_ROLES_TEMPLATE)
    dropped_ba = tokenize(tiny_genrm_server, ba, chat_template=DROP_ROLES_TEMPLATE)
    full_ab, full_ba = tokenize(tiny_genrm_server, ab), tokenize(tiny_genrm_server, ba)
    prompt = detokenize(tiny_genrm_server, dropped_ab["tokens"])
    assert FIRST not in prompt and SECOND not in prompt
    assert dropped_ab["tokens"] == dropped_ba["tokens"]  # both orders: the very same request
    assert full_ab["tokens"] != full_ba["tokens"]
    assert dropped_ab["count"] < full_ab["count"]


@pytest.mark.vllm
def test_greedy_verdicts_parse_and_follow_the_pairs(tiny_genrm_server):
    client = openai_client(tiny_genrm_server)
    pairs = unseen_pairs(4)
    parsed = following = agreeing = 0
    contents = []
    for pair in pairs:
        margins = []
        for order in ("ab", "ba"):
            completion = client.chat.completions.create(
                model=tiny_genrm_server.model, messages=build_messages(*pair, order), temperature=0, max_tokens=128)
            choice = completion.choices[0]
            contents.append(choice.message.content or "")
            verdict = parse_completion(choice.message.content, choice.finish_reason)
            if isinstance(verdict, Verdict):
                parsed += 1
                following += (verdict.score_1, verdict.score_2, verdict.ranking) == expected_verdict(*shown(pair, order))
                margins.append(to_a_side(verdict, order).margin)
        agreeing += len(margins) == 2 and margins[0] * margins[1] > 0
    assert any("Response 1 gives a" in c and "</think>" in c for c in contents)  # no reasoning parser: trace in content
    judged = 2 * len(pairs)
    assert parsed >= judged - 1, f"{parsed} of {judged} greedy answers parsed"
    assert following >= judged - 2, f"{following} of {judged} greedy verdicts followed the pair"
    assert agreeing >= len(pairs) - 1, f"{agreeing} of {len(pairs)} pairs agreed across orders"


@pytest.mark.vllm
def test_sampled_verdicts_mostly_parse_at_the_recommended_settings(tiny_genrm_server):
    client = openai_client(tiny_genrm_server)
    answers = []
    for pair in unseen_pairs(6, seed=7):
        completion = client.chat.completions.create(
            model=tiny_genrm_server.model, messages=build_messages(*pair, "ab"), temperature=0.6, top_p=0.95,
            max_tokens=128)
        choice = completion.choices[0]
        answers.append(parse_completion(choice.message.content, choice.finish_reason))
    parsed = sum(isinstance(a, Verdict) for a in answers)
    assert parsed >= 4, f"only {parsed} of 6 sampled answers parsed: {answers}"


@pytest.mark.vllm
def test_a_cut_off_answer_is_a_failure_not_a_verdict(tiny_genrm_server):
    completion = openai_client(tiny_genrm_server).chat.completions.create(
        model=tiny_genrm_server.model, messages=build_messages(HISTORY, FIRST, SECOND, "ab"), temperature=0, max_tokens=8)
    choice = completion.choices[0]
    assert choice.finish_reason == "length"
    assert parse_completion(choice.message.content, choice.finish_reason).reason == "truncated"


@pytest.mark.vllm
def test_metrics_show_the_batch_gauges_and_prefix_cache_hits(tiny_genrm_server):
    # a prompt longer than one 128-token block, so that a repeat can hit the prefix cache
    history = [{"role": "user", "content": " ".join(f"Step {i}: measure the lamp." for i in range(60))}]
    messages = build_messages(history, FIRST, SECOND, "ab")
    client = openai_client(tiny_genrm_server)
    client.chat.completions.create(model=tiny_genrm_server.model, messages=messages, temperature=0, max_tokens=1)
    before = httpx.get(f"{tiny_genrm_server.root_url}/metrics", timeout=30).text
    client.chat.completions.create(model=tiny_genrm_server.model, messages=messages, temperature=0, max_tokens=1)
    after = httpx.get(f"{tiny_genrm_server.root_url}/metrics", timeout=30).text
    for gauge in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
        assert metric(after, gauge) == 0  # nothing in flight between requests
    queried = metric(after, "vllm:prefix_cache_queries_total") - metric(before, "vllm:prefix_cache_queries_total")
    hits = metric(after, "vllm:prefix_cache_hits_total") - metric(before, "vllm:prefix_cache_hits_total")
    assert queried == tokenize(tiny_genrm_server, messages)["count"]  # counted in tokens
    assert hits >= 128


@pytest.mark.vllm
def test_with_a_reasoning_parser_the_trace_comes_back_apart(vllm_servers):
    spec = VllmServerSpec(reasoning_parser="deepseek_r1")
    server = vllm_servers.start(spec)
    pair = unseen_pairs(1, seed=5)[0]
    try:
        completion = openai_client(server).chat.completions.create(
            model=server.model, messages=build_messages(*pair, "ab"), temperature=0, max_tokens=128)
    finally:
        vllm_servers.stop(spec)  # no other test needs this one
    message = completion.choices[0].message
    reasoning = (message.model_extra or {}).get("reasoning")
    assert reasoning and "Response 1 gives a" in reasoning  # vLLM 0.32 names the field `reasoning`
    assert "</think>" not in (message.content or "") and message.content.strip().startswith("{")
    verdict = parse_completion(message.content, completion.choices[0].finish_reason, reasoning)
    assert isinstance(verdict, Verdict)
    assert (verdict.score_1, verdict.score_2, verdict.ranking) == expected_verdict(*shown(pair, "ab"))
