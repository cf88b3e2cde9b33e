"""What a budget costs a run: `curate judge --budget-gpu-hours H` (H large enough never to stop it) against the same
run without a budget, through the CLI against the GenRM stand-in (SIMULATED: its latency and capacity, not a real
server's), `--strategy swap`, on synthetic HelpSteer3 pairs.

A run within a budget checks it as each pair is about to go, in one dispatch. A run that instead sent its pairs in
batches and checked between them would wait, batch after batch, for each one's slowest request, with the server's
batch part empty. Printed, per seed: each run's measured GPU-seconds a request, its busy seconds and its dispatches;
the budgeted run's GPU-seconds a request over the unbudgeted one's (the baseline, run in the same process against
the same server on a fresh warehouse of the same pairs); then, after an earlier run of a fifth of the pairs (whose
measured rate the budget reads), a run with a budget of half what the run without one measured: how much of it the
run spends before it stops.

    python benchmarks/dispatches.py [--pairs 1000] [--latency 0.5] [--capacity 64] [--seeds 2]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from cli_runs import bench_env, clean_warehouse, curate

from testing.genrm_standin import StandinConfig, StandinProcess


def one_run(pairs: int, seed: int, server_url: str, budget: float | None, first: int = 0) -> dict:
    """The run's GenRM figures (`first` > 0: after an earlier run of that many pairs, which the budget's rate reads)."""
    with tempfile.TemporaryDirectory(prefix="dispatches-bench-") as tmp:
        work = Path(tmp)
        env = bench_env(work, "CURATE_JUDGE_STRATEGY", "CURATE_SOURCES_FILE", "CURATE_JUDGE_BUDGET_GPU_HOURS")
        warehouse = clean_warehouse(work, pairs, seed, env)
        judge = ["judge", "--strategy", "swap", "--endpoint", server_url, "--warehouse", warehouse]
        if first:
            curate(*judge, "--limit", str(first), env=env)
        if budget is not None:
            judge += ["--budget-gpu-hours", str(budget)]
        summary = curate(*judge, env=env, ok=(0, 3))  # 3: stopped at the budget
    genrm = summary["cost"]["by_judge"]["genrm"]
    return {"requests": genrm["requests"], "gpu_seconds": genrm["gpu_seconds"], "busy": genrm["busy_seconds"],
            "dispatches": genrm["dispatches"], "budget": summary.get("budget")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.5, help="the stand-in's mean seconds a request")
    ap.add_argument("--capacity", type=int, default=64, help="the stand-in's batch")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--budget", type=float, default=1000.0, help="GPU-hours: large enough never to stop the run")
    args = ap.parse_args()
    if min(args.pairs, args.capacity, args.seeds) < 1 or args.latency <= 0 or args.budget <= 0:
        ap.error("--pairs, --capacity and --seeds at least 1; --latency and --budget above 0")
    print(f"SIMULATED stand-in (latency {args.latency} s, capacity {args.capacity}); {args.pairs} pairs, "
          f"--strategy swap; a run within a budget against the same run without one")
    ratios = []
    for seed in range(args.seeds):
        with StandinProcess(StandinConfig(latency_mean=args.latency, capacity=args.capacity, seed=seed)) as server:
            base = one_run(args.pairs, seed, server.url, None)
            budgeted = one_run(args.pairs, seed, server.url, args.budget)
            half = base["gpu_seconds"] / 2 / 3600.0
            binding = one_run(args.pairs, seed, server.url, half, first=args.pairs // 5)
        each = {name: r["gpu_seconds"] / r["requests"] for name, r in (("base", base), ("budgeted", budgeted))}
        ratios.append(each["budgeted"] / each["base"])
        for name, r in (("one dispatch", base), ("budgeted", budgeted)):
            print(f"seed {seed}, {name}: {r['requests']:,} requests in {r['dispatches']} dispatches, "
                  f"{r['busy']:.2f} busy seconds, {r['gpu_seconds'] / r['requests']:.4f} GPU-seconds a request")
        print(f"seed {seed}: budgeted / one dispatch, GPU-seconds a request: {ratios[-1]:.3f}")
        print(f"seed {seed}, after {args.pairs // 5} pairs judged, a budget of half what the run without one "
              f"measured ({half:.6f} GPU-hours): stopped "
              f"{binding['budget']['stopped']}, {binding['requests']:,} requests, spent "
              f"{binding['gpu_seconds'] / 3600.0 / half:.3f} of it")
    print(f"mean budgeted / one dispatch over {len(ratios)} seeds: {sum(ratios) / len(ratios):.3f}")


if __name__ == "__main__":
    main()
