"""What the servers measured of a run (a /metrics difference), and what a prefix cache could have served."""

from __future__ import annotations

from tasks.judge.client import ClientOptions
from tasks.judge.config import JudgeConfig
from tasks.judge.run import judge_pairs
from tasks.judge.server_metrics import PrefixCacheModel, block_size, parse_metrics, run_metrics
from tasks.judge.strategies import parse_strategy
from testing.genrm_standin import StandinConfig, StandinProcess
from warehouse.judging import PairText

BEFORE = """# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
vllm:prompt_tokens_total{engine="0",model_name="m"} 100.0
vllm:generation_tokens_total{engine="0",model_name="m"} 50.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 0.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 1.5
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 1.0
vllm:cache_config_info{block_size="128",cache_dtype="auto",enable_prefix_caching="True"} 1.0
"""
AFTER = BEFORE.replace("} 100.0", "} 3121.0", 1).replace("generation_tokens_total{engine=\"0\",model_name=\"m\"} 50.0",
                                                        "generation_tokens_total{engine=\"0\",model_name=\"m\"} 250.0") \
    .replace("prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 100.0",
             "prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 3121.0") \
    .replace("prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 0.0",
             "prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 2688.0") \
    .replace("seconds_sum{engine=\"0\",model_name=\"m\"} 1.5", "seconds_sum{engine=\"0\",model_name=\"m\"} 3.75")


def test_counters_are_read_and_differenced_per_run():
    assert parse_metrics(BEFORE)["prompt_tokens"] == 100.0 and block_size(BEFORE) == 128
    report = run_metrics({"u": BEFORE}, {"u": AFTER})
    assert report["measured"] and report["prompt_tokens"] == 3021 and report["generation_tokens"] == 200
    assert report["prefix_cache_queries"] == 3021 and report["prefix_cache_hits"] == 2688
    assert report["prefix_cache_hit_rate"] == round(2688 / 3021, 4) and report["server_request_seconds"] == 2.25
    assert run_metrics({"u": None}, {"u": "# nothing"}) == {"measured": False}


def test_a_prefix_cache_serves_whole_blocks_of_any_earlier_prompt_and_never_the_last_token():
    cache = PrefixCacheModel(block=4)
    history = list(range(10))
    assert cache.offer(history + [100, 101]) == 0  # nothing before it
    assert cache.offer(history + [200, 201]) == 8  # the two whole blocks of the shared history
    assert cache.offer(history + [100, 101]) == 8  # a repeat: 3 blocks match, the last holds the final token
    assert cache.offer([9] + history) == 0  # a shared run not at the start is no prefix
    assert cache.tokens == 47 and cache.hit_rate == round(16 / 47, 4)


def test_a_runs_attainable_prefix_reuse_comes_from_the_pairs_shared_history():
    long_history = [{"role": "user", "content": "context " * 400}]
    pairs = [PairText(f"p{i}", long_history, f"answer A{i} " * 30, f"answer B{i} " * 30) for i in range(3)]
    written = []
    with StandinProcess(StandinConfig(latency_mean=0.002)) as server:
        summary = judge_pairs(pairs, endpoints=[server.url], config=JudgeConfig(), strategy=parse_strategy("swap"),
                              options=ClientOptions(max_in_flight=2, request_timeout=10), states={},
                              write=written.extend, input_budget=100_000)
    reuse = summary["prefix_reuse"]
    # every prompt after the first shares the rendered history with those before it, whichever pair
    assert reuse["prompt_tokens_with_ids"] > 0 and len(written) == 6
    assert 0.6 < reuse["attainable_hit_rate"] < 0.75, reuse  # 5 of 6 prompts: 800 of their ~980 tokens
