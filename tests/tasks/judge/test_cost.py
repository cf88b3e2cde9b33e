"""What judging cost: the counts, and GPU-hours estimated under the assumed throughput."""

import pytest

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


def test_a_requests_steady_cost_is_the_middle_halfs_slope_past_the_ramp_up_and_before_the_drain():
    from tasks.judge.cost import STEADY_MIN_REQUESTS, steady_seconds_per_request

    # the busy seconds as each of 40 requests ended: a slow first tenth (the batch filling), then 0.05 s a
    # request, then a drain whose last requests end far apart
    ramp = [0.5 * (i + 1) for i in range(4)]
    steady = [ramp[-1] + 0.05 * (i + 1) for i in range(32)]
    drain = [steady[-1] + 1.0 * (i + 1) for i in range(4)]
    trace = ramp + steady + drain
    assert steady_seconds_per_request(trace) == pytest.approx(0.05)
    whole = trace[-1] / len(trace)
    assert whole > 3 * 0.05  # what the whole run spent a request: the ramp-up and drain spread over too few
    assert steady_seconds_per_request(trace[:STEADY_MIN_REQUESTS - 1]) is None


def test_the_measured_gpu_seconds_carry_the_steady_cost_and_the_dispatches_for_a_later_estimate():
    from tasks.judge.cost import measured_gpu_seconds

    trace = [0.1 * (i + 1) for i in range(20)]
    got = measured_gpu_seconds("genrm", 20, {"http://a": 2.0}, 8, trace, dispatches=1)
    judge = got["by_judge"]["genrm"]
    assert got["gpu_seconds"] == 16.0 and judge["dispatches"] == 1
    assert judge["steady_gpu_seconds_per_request"] == pytest.approx(0.8)  # 0.1 busy seconds on 8 GPUs
    assert measured_gpu_seconds("genrm", 3, {"http://a": 1.0}, 8)["by_judge"]["genrm"][
        "steady_gpu_seconds_per_request"] is None
