"""The reward-model stand-in: scores that follow the latent truth with their own noise and biases, and vLLM's
pooling API shape over HTTP (SIMULATED scores, said so)."""

from __future__ import annotations

import math

import httpx
import numpy as np

from tasks.ingest.latent import latent_quality
from testing.reward_model_standin import (
    BOS,
    RewardStandinConfig,
    RewardStandinProcess,
    render,
    score_for,
    weak,
)

ANSWERS = [f"answer number {i} " + "word " * (i % 40) for i in range(600)]


def _agreement(config: RewardStandinConfig, prompts: list[str]) -> float:
    right = 0
    for i, prompt in enumerate(prompts):
        a, b = ANSWERS[i], ANSWERS[-1 - i]
        truth = latent_quality(a) > latent_quality(b)
        right += (score_for(prompt, a, config) > score_for(prompt, b, config)) == truth
    return right / len(prompts)


def test_scores_follow_the_truth_except_where_it_is_weak_and_lean_on_length():
    config = RewardStandinConfig()
    prompts = [f"prompt {i}" for i in range(3000)]
    strong = [p for p in prompts if not weak(p, config)][:300]
    weak_ones = [p for p in prompts if weak(p, config)][:300]
    assert abs(len([p for p in prompts if weak(p, config)]) / len(prompts) - config.weak_share) < 0.03
    assert _agreement(config, strong) > 0.75 > _agreement(config, weak_ones)
    long, short = "a long answer " * 40, "short"
    biased = RewardStandinConfig(length_bias=1.0)
    assert (score_for("p", long, biased) - score_for("p", long, config)
            == score_for("p", short, biased) - score_for("p", short, config) + 2.0 * math.log(len(long) / len(short)))
    assert score_for("p", "x", config) == score_for("p", "x", RewardStandinConfig(seed=5))  # from the content only


def test_it_serves_the_pooling_api_and_counts_a_duplicated_bos():
    config = RewardStandinConfig(latency_mean=0.0)
    messages = [{"role": "user", "content": "a question"}, {"role": "assistant", "content": "an answer"}]
    with RewardStandinProcess(config) as server:
        ids = httpx.post(f"{server.base}/tokenize", json={"messages": messages}, timeout=10).json()["tokens"]
        by_ids = httpx.post(f"{server.base}/classify", json={"input": [ids], "use_activation": False},
                            timeout=10).json()
        by_text = httpx.post(f"{server.base}/classify", json={"input": render(messages)}, timeout=10).json()
        pooled = httpx.post(f"{server.base}/pooling", json={"input": [ids]}, timeout=10).json()
        stats = server.stats()
    assert render(messages).startswith(BOS) and not render(messages).startswith(BOS + BOS)
    score = score_for("a question", "an answer", config)
    assert by_ids["data"][0]["probs"] == [score] and by_ids["data"][0]["num_classes"] == 1
    assert pooled["data"][0]["data"] == [score] and "SIMULATED" in by_ids["model"]
    assert by_text["data"][0]["probs"] == [score]  # the same text, but tokenized with a second BOS in front
    assert stats["duplicated_bos"] == 1 and stats["scored"] == 3 and stats["kind"] == "reward-model"
    assert np.isfinite(score)
