"""The fixed cost of a `curate` call: wall and CPU seconds of `ingest`, `judge`, `build-version` and `publish`
when there is nothing to do (an unchanged revision, every verdict cached, an unchanged version, already
published), so that all of it is start-up.

A small warehouse is made first (the CLI end to end, the stand-in judging: SIMULATED). Each no-op is then
timed `--repeat` times as a user would run it. Without `PREFECT_API_URL` each call starts Prefect's
temporary API server; with it set (a running `prefect server start`), calls use that server.

Baseline named in issue 13: a `curate judge` with nothing to do cost 8-16 s wall and 7-8 CPU-s; the target
is at least half of that where no server runs.

Run: `python benchmarks/startup.py [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_runs import bench_env, curate_exe  # noqa: E402  (sets offline Prefect defaults)

from tasks.ingest.synth import write_synth  # noqa: E402
from testing.genrm_standin import StandinConfig, StandinProcess  # noqa: E402

BASELINE_JUDGE_WALL = (8.0, 16.0)
BASELINE_JUDGE_CPU = (7.0, 8.0)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children) of one call."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    exe = curate_exe()
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        work = Path(tmp)
        env = bench_env(work)
        w = ["--warehouse", str(work / "w.duckdb")]
        data = work / "hs.jsonl"
        write_synth(data, "helpsteer3", 200, seed=3, pair_bytes=500)
        with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
            commands = {
                "ingest": [exe, "ingest", "--source", "helpsteer3", "--path", str(data), *w],
                "judge": [exe, "judge", "--endpoint", server.url, *w],
                "build-version": [exe, "build-version", "startup", *w],
                "publish": [exe, "publish", "startup", "--to", str(work / "published"), *w],
            }
            for argv in commands.values():  # the real work, once
                timed(argv, env)
            server_note = env.get("PREFECT_API_URL") or "none (Prefect's temporary server per call)"
            print(f"no-op calls, {args.repeat} each; Prefect API: {server_note}")
            print(f"{'command':<14} {'wall s (median)':>16} {'CPU s (median)':>15}")
            results = {}
            for name, argv in commands.items():
                runs = [timed(argv, env) for _ in range(args.repeat)]
                results[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
                print(f"{name:<14} {results[name][0]:>16.2f} {results[name][1]:>15.2f}")
            # Beside the no-ops: calls that do (a little) work run a flow, so they start the Prefect API.
            with_work = {
                "status (floor)": [exe, "status", *w],
                "ingest --force": [*commands["ingest"], "--force"],
            }
            print(f"\ncalls with work ({'the configured Prefect server' if env.get('PREFECT_API_URL') else 'a temporary Prefect API each'}; "
                  f"--force re-reads the 200 rows):")
            for name, argv in with_work.items():
                runs = [timed(argv, env) for _ in range(args.repeat)]
                print(f"{name:<14} {statistics.median(r[0] for r in runs):>16.2f} "
                      f"{statistics.median(r[1] for r in runs):>15.2f}")
    wall, cpu = results["judge"]
    print(f"\njudge no-op vs the issue's baseline ({BASELINE_JUDGE_WALL[0]:g}-{BASELINE_JUDGE_WALL[1]:g} s wall, "
          f"{BASELINE_JUDGE_CPU[0]:g}-{BASELINE_JUDGE_CPU[1]:g} CPU-s): {wall / BASELINE_JUDGE_WALL[0]:.2f}x of the "
          f"lower wall figure, {cpu / BASELINE_JUDGE_CPU[0]:.2f}x of the lower CPU figure")
    halved = wall <= BASELINE_JUDGE_WALL[0] / 2 and cpu <= BASELINE_JUDGE_CPU[0] / 2
    print(f"{'PASS' if halved else 'FAIL'}  judge's fixed cost at most half the baseline (<= "
          f"{BASELINE_JUDGE_WALL[0] / 2:g} s wall and {BASELINE_JUDGE_CPU[0] / 2:g} CPU-s)")
    sys.exit(0 if halved else 1)


if __name__ == "__main__":
    main()
