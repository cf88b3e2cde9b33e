"""What judging cost: GPU-seconds measured per judge, and requests, tokens, judge time and a planning estimate of
GPU-hours under a configured server throughput.

GPU-seconds are measured (`measured_gpu_seconds`): the seconds at least one of the run's requests was in flight on
an endpoint, times the GPUs its server holds (`CURATE_VLLM_TENSOR_PARALLEL_SIZE` x `CURATE_VLLM_DATA_PARALLEL_SIZE`
for the GenRM, `CURATE_JUDGE_RM_GPUS` for a judge ladder's reward model), per judge kind. The GPU-hours estimate is
a planning figure: the tokens a server processed (prompt and generated) divided by the
throughput a team measured for its deployment (`CURATE_COST_SERVER_TOKENS_PER_SECOND`, the whole server's
tokens/s), times the GPUs that server holds. Reasoning traces dominate; the estimate says which figures it
used, so a dashboard reader can redo it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CostModel:
    server_tokens_per_second: float  # prompt + generated tokens per second, one judge server
    gpus_per_server: int

    def gpu_hours(self, tokens: int) -> float:
        return tokens / self.server_tokens_per_second / 3600.0 * self.gpus_per_server


def cost_model(settings: Any) -> CostModel:
    """The settings' estimate: CURATE_COST_SERVER_TOKENS_PER_SECOND on a server of TP x DP GPUs."""
    return CostModel(settings.cost_server_tokens_per_second, settings.gpus_per_server)


def cost_report(*, requests: int, tokens_in: int, tokens_out: int, judge_seconds: float, kept: int | None,
                model: CostModel, measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """One cost block: the counts, then the estimate and the assumptions behind it. With what the servers
    measured (`server_metrics.run_metrics`), their token counts are used and their throughput is shown beside
    the assumed one; GPU-hours stay an estimate under the assumed throughput either way (a server's busy
    GPUs are not in its metrics)."""
    from_server = bool(measured and measured.get("measured") and "prompt_tokens" in measured)
    if from_server:
        tokens_in, tokens_out = measured["prompt_tokens"], measured.get("generation_tokens", tokens_out)
    tokens = tokens_in + tokens_out
    gpu_hours = model.gpu_hours(tokens)
    return {
        "requests": requests,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tokens_measured_by": "server /metrics" if from_server else "the replies' usage",
        "judge_seconds": round(judge_seconds, 3),
        "measured_server_tokens_per_second": round(tokens / judge_seconds, 1) if from_server and judge_seconds else None,
        "tokens_per_kept_pair": round(tokens / kept, 1) if kept else None,
        "gpu_hours": round(gpu_hours, 6),
        "gpu_hours_basis": "estimated: tokens / assumed server tokens per second x assumed GPUs per server",
        "gpu_hours_per_1000_kept": round(1000.0 * gpu_hours / kept, 6) if kept else None,
        "assumed_server_tokens_per_second": model.server_tokens_per_second,
        "assumed_gpus_per_server": model.gpus_per_server,
    }


STEADY_MIN_REQUESTS = 16  # fewer, and a run's middle half is too short to say what a request costs


def steady_seconds_per_request(busy_at_completion: Sequence[float]) -> float | None:
    """The busy seconds one more request costs: the slope of the run's busy seconds over its requests' middle half
    (each request's end), where the ramp-up to the server's batch and the drain after the last send are behind and
    ahead. None under STEADY_MIN_REQUESTS requests."""
    n = len(busy_at_completion)
    if n < STEADY_MIN_REQUESTS:
        return None
    first, last = n // 4, (3 * n) // 4
    return max(busy_at_completion[last] - busy_at_completion[first], 0.0) / (last - first)


def measured_gpu_seconds(kind: str, requests: int, busy_seconds: dict[str, float], gpus: int,
                         busy_at_completion: Sequence[float] = (), dispatches: int = 0) -> dict[str, Any]:
    """The run's measured GPU time, whole and for its judge `kind`: each endpoint's busy seconds (at least one of
    the run's requests in flight on it) times the GPUs its server holds; with the requests' ends, the steady
    GPU-seconds a request (`steady_seconds_per_request`) and the dispatches that each ramped up and drained, which
    a later run's estimate reads (`tasks.judge.estimate.measured_rate`)."""
    busy = sum(busy_seconds.values())
    spent = round(busy * gpus, 3)
    steady = steady_seconds_per_request(busy_at_completion)
    return {"gpu_seconds": spent,
            "gpu_seconds_basis": "measured: seconds at least one of the run's requests was in flight on an endpoint, "
                                 "times the GPUs its server holds",
            "by_judge": {kind: {"gpu_seconds": spent, "requests": requests, "busy_seconds": round(busy, 3),
                                "gpus_per_server": gpus, "dispatches": dispatches,
                                "steady_gpu_seconds_per_request": None if steady is None else round(steady * gpus, 6)}}}


def kept_gpu_seconds(spent: dict[str, float], kept: int) -> dict[str, Any]:
    """A version's measured GPU cost: the GPU-seconds its configuration's judge runs measured (`spent`: whole and
    per judge kind), and per kept pair."""
    return {"gpu_seconds": round(spent.get("gpu_seconds", 0.0), 3),
            "gpu_seconds_by_judge": {k: round(v, 3) for k, v in spent.items() if k != "gpu_seconds"},
            "gpu_seconds_per_kept_pair": round(spent.get("gpu_seconds", 0.0) / kept, 6) if kept else None}
