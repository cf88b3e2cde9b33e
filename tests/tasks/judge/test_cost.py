"""What judging cost: the counts, and GPU-hours estimated under the assumed throughput."""

from common.settings import Settings
from tasks.judge.cost import CostModel, cost_model, cost_report


def test_gpu_hours_are_tokens_over_the_assumed_throughput_times_the_gpus():
    model = CostModel(server_tokens_per_second=1000.0, gpus_per_server=8)
    assert model.gpu_hours(3_600_000) == 8.0
    settings = Settings(cost_server_tokens_per_second=2500.0, vllm_tensor_parallel_size=4, vllm_data_parallel_size=2)
    assert cost_model(settings) == CostModel(2500.0, 8)


def test_the_report_uses_the_replies_counts_unless_the_servers_measured_them():
    model = CostModel(1000.0, 1)
    r = cost_report(requests=10, tokens_in=1000, tokens_out=2600, judge_seconds=4.0, kept=4, model=model)
    assert (r["tokens_in"], r["tokens_out"], r["tokens_measured_by"]) == (1000, 2600, "the replies' usage")
    assert r["gpu_hours"] == round(3600 / 1000 / 3600, 6) and r["tokens_per_kept_pair"] == 900.0
    assert r["gpu_hours_per_1000_kept"] == round(1000 * 0.001 / 4, 6) and r["measured_server_tokens_per_second"] is None
    measured = {"measured": True, "prompt_tokens": 2000, "generation_tokens": 2000}
    m = cost_report(requests=10, tokens_in=1000, tokens_out=2600, judge_seconds=4.0, kept=None, model=model,
                    measured=measured)
    assert (m["tokens_in"], m["tokens_out"], m["tokens_measured_by"]) == (2000, 2000, "server /metrics")
    assert m["measured_server_tokens_per_second"] == 1000.0 and m["tokens_per_kept_pair"] is None
    assert "estimated" in m["gpu_hours_basis"]
