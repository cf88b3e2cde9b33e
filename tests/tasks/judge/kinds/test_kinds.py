"""Both judge kinds over real HTTP, each against its stand-in: the request a kind sends, the verdict it reads on
the canonical pair, its slots, its probe and its identity."""

from __future__ import annotations

import asyncio

import pytest

from tasks.judge.client import ClientOptions, Dispatcher, JudgeResult
from tasks.judge.config import JudgeConfig
from tasks.judge.endpoints import check_endpoints
from tasks.judge.genrm import MAX_MARGIN
from tasks.judge.kinds import GENRM, KINDS, NO_ORDER, REWARD_MODEL, JudgeKind
from tasks.judge.kinds.reward_model import PROMPT_VERSION, conversation
from tasks.judge.run import Plan, plan_requests
from tasks.judge.strategies import Swap
from tasks.judge.strategies.protocol import Strategy
from testing.genrm_standin import StandinConfig, StandinProcess
from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess, render, score_for, tokenize
from warehouse.judging import PairText

HISTORY = [{"role": "user", "content": "Name a prime number between 10 and 20."}]
PAIRS = [PairText(f"p{i}", [{"role": "user", "content": f"Question {i}: which answer is better?"}],
                  f"Answer A to question {i}.", f"A rather longer answer B to question {i}, with more words.")
         for i in range(12)]


class _Scores(Strategy):
    usage, takes_k, one_order_on_purpose, label = "scores", False, False, "scores"

    @classmethod
    def from_spec(cls, k, settings):
        return cls()

    def initial(self):
        return REWARD_MODEL.slots()


def _judge(url: str, config: JudgeConfig, strategy: Strategy, kind: JudgeKind, budget: int | None = None,
           ) -> list[JudgeResult]:
    results: list[JudgeResult] = []
    dispatcher = Dispatcher([url], config, ClientOptions(input_budget=budget, max_in_flight=8),
                            lambda r: results.append(r) or [])
    asyncio.run(dispatcher.run(plan_requests(PAIRS, strategy, {}, 3, Plan(), kind=kind)))
    return sorted(results, key=lambda r: r.request.pair_id)


def test_every_kind_declares_the_whole_seam():
    assert set(KINDS) == {"genrm", "reward_model"}
    for name, kind in KINDS.items():
        assert isinstance(kind, JudgeKind) and kind.name == name and kind.path.startswith("/")


def test_the_genrm_s_configuration_ids_are_unchanged_and_a_reward_model_s_leave_out_its_sampling():
    assert JudgeConfig().id == "jc-562a3c403e151f50"  # the id every GenRM verdict was filed under before kinds
    rm = JudgeConfig(kind="reward_model", model="rm", prompt_version=PROMPT_VERSION)
    assert rm.id != JudgeConfig(model="rm", prompt_version=PROMPT_VERSION).id
    assert rm.id == JudgeConfig(kind="reward_model", model="rm", prompt_version=PROMPT_VERSION, temperature=0.1).id


def test_a_genrm_slot_is_an_order_and_a_sample_and_a_reward_model_has_one_slot_with_no_order():
    assert GENRM.slots(2) == [("ab", 0), ("ba", 0), ("ab", 1), ("ba", 1)]
    assert REWARD_MODEL.slots(3) == [(NO_ORDER, 0)]
    messages, payload = REWARD_MODEL.messages(HISTORY, "A", "B", (NO_ORDER, 0))
    assert messages == conversation(HISTORY, "A") == [*HISTORY, {"role": "assistant", "content": "A"}]
    assert payload.b == [*HISTORY, {"role": "assistant", "content": "B"}]  # no system prompt of the project's own


def test_the_genrm_kind_judges_both_orders_against_its_stand_in():
    with StandinProcess(StandinConfig(latency_mean=0.0)) as server:
        results = _judge(server.url, JudgeConfig(simulated=True), Swap(), GENRM)
    assert len(results) == 2 * len(PAIRS) and all(r.status == "ok" for r in results)
    assert all(abs(r.side.margin) <= MAX_MARGIN and r.verdict.ranking in range(1, 7) for r in results)


def test_the_reward_model_kind_scores_each_answer_once_raw_with_exact_counts_and_one_bos():
    config = RewardStandinConfig(latency_mean=0.0)
    with RewardStandinProcess(config) as server:
        report = check_endpoints([server.url], "any", timeout=5, kind=REWARD_MODEL)
        rm = JudgeConfig(kind="reward_model", model=report.served[server.url][0], prompt_version=PROMPT_VERSION,
                         simulated=report.simulated, template=report.template or "")
        results = _judge(server.url, rm, _Scores(), REWARD_MODEL, budget=10_000)
        stats = server.stats()
    assert report.simulated and report.template
    assert [r.request.order for r in results] == [NO_ORDER] * len(PAIRS) and all(r.status == "ok" for r in results)
    for pair, r in zip(sorted(PAIRS), results):
        prompt = pair.history[-1]["content"]
        assert r.side.margin == pytest.approx(score_for(prompt, pair.response_a, config)
                                              - score_for(prompt, pair.response_b, config))
        assert r.verdict.score_1 is None and r.side.ranking_a is None  # none of the GenRM's columns
        # the exact count: the ids the server's template rendered, sent as they are
        a, b = (len(tokenize(render(conversation(pair.history, x)))) for x in (pair.response_a, pair.response_b))
        assert r.tokens_in == a + b
    assert stats["scored"] == 2 * len(PAIRS) and stats["duplicated_bos"] == 0  # raw ids: no second BOS


def test_a_reward_model_prompt_over_its_context_is_never_sent():
    with RewardStandinProcess(RewardStandinConfig(latency_mean=0.0)) as server:
        rm = JudgeConfig(kind="reward_model", model="m", prompt_version=PROMPT_VERSION, simulated=True)
        results = _judge(server.url, rm, _Scores(), REWARD_MODEL, budget=5)
        assert server.stats()["scored"] == 0
    assert {r.failure_reason for r in results} == {"over_budget"}


def test_the_reward_model_stand_in_serves_no_generation_and_says_its_scores_are_simulated():
    import httpx

    with RewardStandinProcess(RewardStandinConfig()) as server:
        chat = httpx.post(f"{server.url}/chat/completions", json={"model": "m", "messages": HISTORY}, timeout=10)
        models = httpx.get(f"{server.url}/models", timeout=10).json()["data"][0]
    assert chat.status_code == 404
    assert "SIMULATED" in models["id"] and "SIMULATED" in models["root"]
