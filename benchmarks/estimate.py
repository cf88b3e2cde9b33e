"""`curate judge --estimate` against what the run then measured, through the CLI as a user runs it (SIMULATED: the GenRM
stand-in's latency and capacity, not a real server's).

A warehouse of synthetic HelpSteer3 pairs; `curate judge --limit FIRST` judges the first pairs (what the estimate then
reads as the judge's measured rate); `curate judge --estimate` estimates the pairs left; `curate judge` judges them.
Printed: the estimate's GPU-hours (low, expected, high) beside the run's measured ones, the expected figure's ratio
to the measured, each judge's dispatches (the earlier run's and the run's), and, as the baseline in the same
process, the earlier run's mean GPU-seconds a request times the requests (what the estimate read before it timed its
requests' steady cost; for a strategy in rounds, times the most requests the run could send). `--strategy certify`
or `ladder` judge toward a 90% target (a ladder with the reward-model stand-in beside the GenRM's): the rungs only
some pairs climb to are expected from the estimate's replay of the rounds' rule
(`tasks.review.rounds.climb_shares`); a run with no expected figure counts as a miss.

    python benchmarks/estimate.py [--pairs 1000] [--first 200] [--strategy swap|certify|ladder] [--latency 0.05]
                                  [--capacity 64] [--seeds 3] [--rm-first]

`--rm-first` (a ladder): between the earlier run and the estimate, `curate judge --reward-model-only`, which
scores the reward model's rung and stops before the GenRM's; the estimate then decides the GenRM's first rung as
the run will.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from cli_runs import bench_env, clean_warehouse, curate

from testing.genrm_standin import StandinConfig, StandinProcess


def one_run(pairs: int, first: int, strategy: str, latency: float, capacity: int, gpus: int, seed: int,
            rm_first: bool = False) -> dict:
    from contextlib import nullcontext

    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    ladder = strategy.startswith("ladder")
    with tempfile.TemporaryDirectory(prefix="estimate-bench-") as tmp:
        work = Path(tmp)
        env = bench_env(work, "CURATE_JUDGE_STRATEGY", "CURATE_SOURCES_FILE", "CURATE_JUDGE_BUDGET_GPU_HOURS")
        warehouse = clean_warehouse(work, pairs, seed, env)
        judge = ["judge", "--strategy", strategy, "--gpus", str(gpus), "--warehouse", warehouse]
        if strategy.startswith(("certify", "ladder")):
            judge += ["--target-agreement", "0.9"]
        with (StandinProcess(StandinConfig(latency_mean=latency, capacity=capacity, seed=seed)) as server,
              RewardStandinProcess(RewardStandinConfig(seed=seed)) if ladder else nullcontext() as rm):
            judge += ["--endpoint", server.url, *(["--rm-endpoint", rm.url] if ladder else [])]
            earlier = curate(*judge, "--limit", str(first), env=env)
            if rm_first:  # pay for the reward model's rung alone
                curate(*judge, "--reward-model-only", env=env)
            estimate = curate(*judge, "--estimate", env=env)["estimate"]
            run = curate(*judge, env=env)
    spent = earlier["cost"]
    baseline = spent["gpu_seconds"] / earlier["requests"] * estimate["requests"]["high"] / 3600.0
    return {"estimate": estimate["gpu_hours"], "requests": estimate["requests"], "baseline": baseline,
            "measured": run["cost"]["gpu_seconds"] / 3600.0, "measured_requests": run["requests"],
            "basis": estimate["rungs"][0]["basis"],
            "rungs": [r["requests"].get("expected", r["requests"]["high"]) for r in estimate["rungs"]],
            "rounds": [r["requests"] for r in run.get("rounds") or []],
            "dispatches": {kind: (earlier["cost"]["by_judge"].get(kind, {}).get("dispatches"), j.get("dispatches"))
                           for kind, j in run["cost"]["by_judge"].items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--first", type=int, default=200, help="pairs judged before the estimate")
    ap.add_argument("--strategy", default="swap")
    ap.add_argument("--latency", type=float, default=0.05, help="the stand-in's mean seconds a request")
    ap.add_argument("--capacity", type=int, default=64, help="the stand-in's batch")
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rm-first", action="store_true", help="with ladder: before the estimate, `curate judge "
                    "--reward-model-only` (its scores in, the estimate decides the GenRM's first rung)")
    args = ap.parse_args()
    print(f"SIMULATED stand-in (latency {args.latency} s, capacity {args.capacity}); {args.pairs} pairs, "
          f"{args.first} judged first, --strategy {args.strategy}, {args.gpus} GPUs declared")
    worst = 0.0
    for seed in range(args.seeds):
        r = one_run(args.pairs, args.first, args.strategy, args.latency, args.capacity, args.gpus, seed,
                    args.rm_first)
        est, measured = r["estimate"], r["measured"]
        ratio = est["expected"] / measured if est["expected"] is not None and measured else float("nan")
        worst = max(worst, abs(ratio - 1.0)) if ratio == ratio else float("inf")  # no expected figure: a miss
        print(f"seed {seed}: estimate {est['low']:.5f} .. {est['high']:.5f} GPU-hours, expected {est['expected']}; "
              f"measured {measured:.5f} ({r['measured_requests']:,} requests, {r['requests'].get('expected', '-')} expected, "
              f"{r['requests']['high']:,} at most); "
              f"expected / measured {ratio:.3f}; baseline (earlier mean a request) / measured "
              f"{r['baseline'] / measured:.3f}; within the range: {est['low'] <= measured <= est['high']}")
        print(f"         {r['basis']}")
        print("         dispatches (earlier run, this run): " + ", ".join(
            f"{kind} {before} / {now}" for kind, (before, now) in r["dispatches"].items())
              + f"; requests expected a rung {r['rungs']}, sent a round {r['rounds']}")
    print(f"worst |expected / measured - 1| over {args.seeds} seeds: {worst:.3f} (target: at most 0.25): "
          f"{'PASS' if worst <= 0.25 else 'FAIL'}")


if __name__ == "__main__":
    main()
