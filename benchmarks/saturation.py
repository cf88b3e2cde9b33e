"""Does `curate judge` keep a vLLM-like server's batch full without being told its size?

For each server size (the stand-in's capacity 16, 64, 256; lognormal service time, mean 2 s), a fresh
warehouse gets synthetic pairs through `curate ingest`, then `curate judge --endpoint URL --strategy single`
runs with its defaults (no --max-in-flight) as a user would, end to end. From the stand-in's own counters:

- steady-state busy: slot-busy share from the moment the batch was first full to the last request sent;
- whole run: judgments per second over the judge run / (capacity / mean latency);
- the server's waiting queue: time-weighted mean and max over the run;
- ramp-up: seconds from the first request until requests first waited (the batch was full).

Targets (issue 13): busy >= 0.95, whole run >= 0.90, queue mean <= 10% of capacity, max <= 25% + 8.
Baseline named in the issue: `curate judge` at its old fixed default of 64 in flight reached 0.92 of
capacity / mean latency on a capacity-64 server. The stand-in's verdicts are SIMULATED.

Run: `python benchmarks/saturation.py` (about 5 minutes on 2 cores); `--sizes 16 64` for fewer.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_runs import bench_env, curate

from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess

MEAN_LATENCY = 2.0
# At least the 600 and 2,000. Every run ends with its last batch draining, and the slowest of 256
# lognormal draws takes about 3x the mean: at 5,000 judgments that drain alone held capacity 256 to 0.864
# of capacity / mean latency (measured, steady-state busy 0.999); 10,000 halves its weight.
JUDGMENTS = {16: 600, 64: 2000, 256: 10000}
BASELINE_64 = 0.92


def run_size(capacity: int, judgments: int, work: Path, sigma: float) -> dict:
    env = bench_env(work, "CURATE_JUDGE_MAX_IN_FLIGHT")
    warehouse = work / f"w{capacity}.duckdb"
    data = work / f"hs{capacity}.jsonl"
    write_synth(data, "helpsteer3", judgments, seed=capacity, pair_bytes=800, exact_dup_rate=0.0, near_dup_rate=0.0,
                bad_rate=0.0)
    ingested = curate("ingest", "--source", "helpsteer3", "--path", str(data), "--warehouse", str(warehouse), env=env)
    with StandinProcess(StandinConfig(capacity=capacity, latency_mean=MEAN_LATENCY, latency_sigma=sigma)) as server:
        started = time.time()
        summary = curate("judge", "--endpoint", server.url, "--strategy", "single", "--warehouse", str(warehouse),
                         env=env)
        first = server.stats()["first_request_at"]
        found = summary["concurrency"][server.url]
        full_at = first + (found["batch_full_after_s"] or 0.0)
        last_sent = summary["last_request_sent_at"]
        steady = server.stats(start=full_at, end=last_sent)
        whole = server.stats(start=first, end=last_sent)
    judged = summary["judged"]
    rate = judged / summary["seconds"]
    return {
        "capacity": capacity, "pairs": ingested["new_pairs"], "judged": judged, "failed": summary["failed"],
        "seconds": summary["seconds"], "cli_wall": round(time.time() - started, 1),
        "busy_steady": steady["busy_fraction"], "whole_run": rate / (capacity / MEAN_LATENCY),
        "waiting_mean": whole["waiting_mean"], "waiting_max": whole["waiting_max"],
        "ramp_s": found["batch_full_after_s"], "final_cap": found["final"], "peak_cap": found["peak"],
        "mode": found["mode"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--sigma", type=float, default=0.5, help="lognormal sigma of the service time")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="saturation-") as tmp:
        for capacity in args.sizes:
            n = JUDGMENTS.get(capacity, max(2000, capacity * 20))
            print(f"capacity {capacity}: {n} judgments, lognormal mean {MEAN_LATENCY} s (sigma {args.sigma}) ...",
                  flush=True)
            rows.append(run_size(capacity, n, Path(tmp), args.sigma))
    print("\n`curate judge` with its defaults (no --max-in-flight) against the stand-in (SIMULATED verdicts)")
    print(f"{'capacity':>8} {'judged':>7} {'mode':>8} {'final':>6} {'peak':>5} {'ramp s':>7} {'busy':>6} "
          f"{'whole':>6} {'q mean':>7} {'q max':>6}")
    ok = True
    for r in rows:
        c = r["capacity"]
        checks = [
            ("steady-state busy >= 0.95", r["busy_steady"] >= 0.95, f"{r['busy_steady']:.3f}"),
            ("whole run >= 0.90 of capacity/mean latency", r["whole_run"] >= 0.90, f"{r['whole_run']:.3f}"),
            (f"queue mean <= {0.10 * c:.1f} (10% of capacity)", r["waiting_mean"] <= 0.10 * c, f"{r['waiting_mean']:.2f}"),
            (f"queue max <= {0.25 * c + 8:.0f} (25% + 8)", r["waiting_max"] <= 0.25 * c + 8, f"{r['waiting_max']}"),
        ]
        print(f"{c:>8} {r['judged']:>7} {r['mode']:>8} {r['final_cap']:>6} {r['peak_cap']:>5} {r['ramp_s']!s:>7} "
              f"{r['busy_steady']:>6.3f} {r['whole_run']:>6.3f} {r['waiting_mean']:>7.2f} {r['waiting_max']:>6}")
        for name, passed, value in checks:
            ok &= passed
            print(f"    {'PASS' if passed else 'FAIL'}  {name}: {value}")
        if c == 64:
            print(f"    whole run vs the issue's baseline (fixed 64 in flight, {BASELINE_64}): "
                  f"{r['whole_run'] / BASELINE_64:.3f}x")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
