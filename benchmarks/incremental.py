#!/usr/bin/env python
"""Incremental runs: the whole pipeline twice on the same sources, each in its own process.

    python benchmarks/incremental.py              # 20,000 synthetic HelpSteer3-shaped rows, swap judging
    python benchmarks/incremental.py --rows 2000  # a quick check

Prints each run's CPU seconds (user + system of the process and everything it waited for, the
ephemeral Prefect server included), wall seconds and judge requests, and the second run's CPU as a share
of the first's. Target: the nightly run on unchanged sources makes 0 judge calls, no new version, in
<= 10% of the first run's CPU time. The judge is the SIMULATED GenRM stand-in (its own process, not
counted in either run's CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess

TARGET_SHARE = 0.10
CHILD = """
import json, sys
from flows.pipeline import curate_pipeline
s = curate_pipeline([f"helpsteer3={sys.argv[1]}"], [sys.argv[2]], strategy="swap", dataset="nightly",
                    publish_to=sys.argv[3], warehouse=sys.argv[4])
print("RESULT " + json.dumps({"judge_requests": s["judge"]["requests"], "new_version": s["version"].get("new_version"),
                              "version": s["version"].get("version"), "read": s["ingest"]["helpsteer3"]["read"],
                              "note": s["ingest"]["helpsteer3"].get("note", "")}), flush=True)
"""


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(env: dict[str, str], args: list[str]) -> tuple[float, float, dict]:
    cpu0, t0 = child_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=REPO, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, child_cpu() - cpu0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-5000:])
        raise SystemExit(f"pipeline run failed with exit code {proc.returncode}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return cpu, wall, json.loads(line[len("RESULT "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "hs.jsonl"
        write_synth(data, "helpsteer3", args.rows, seed=args.seed)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CURATE_", "PREFECT_"))}
        env.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", HF_HUB_OFFLINE="1",
                   PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120", PREFECT_HOME=str(work / "prefect-home"),
                   PYTHONPATH=str(REPO))
        # Prefect's own database is created by the first flow in a new home: once, not part of either run.
        subprocess.run([sys.executable, "-c", "from prefect import flow\nflow(lambda: None, name='warm-up')()\n"],
                       cwd=REPO, env=env, check=True, capture_output=True)
        print(f"incremental benchmark: {args.rows} synthetic HelpSteer3-shaped rows, strategy swap, "
              f"GenRM stand-in (SIMULATED), {os.cpu_count()} CPUs")
        with StandinProcess(StandinConfig(capacity=64, latency_mean=0.01)) as standin:
            common = [str(data), standin.url, str(work / "published"), str(work / "warehouse.duckdb")]
            first = run_once(env, common)
            second = run_once(env, common)
            requests = standin.stats()["requests"]
        for label, (cpu, wall, result) in (("first run", first), ("second run (unchanged sources)", second)):
            print(f"  {label:32s} CPU {cpu:8.2f} s   wall {wall:7.2f} s   judge requests {result['judge_requests']:6d}"
                  f"   read {result['read']:6d}   version v{result['version']} (new: {result['new_version']})")
        share = second[0] / first[0]
        print(f"  stand-in requests over both runs {requests}")
        print(f"  second run's note: {second[2]['note']}")
        print("TARGETS")
        ok = second[2]["judge_requests"] == 0 and not second[2]["new_version"] and share <= TARGET_SHARE
        print(f"  {'PASS' if second[2]['judge_requests'] == 0 else 'FAIL'}  0 judge calls on unchanged sources   "
              f"{second[2]['judge_requests']}")
        print(f"  {'PASS' if not second[2]['new_version'] else 'FAIL'}  no new version                       "
              f"v{second[2]['version']} again")
        print(f"  {'PASS' if share <= TARGET_SHARE else 'FAIL'}  CPU <= 10% of the first run's         "
              f"{share:.1%} ({second[0]:.2f} s of {first[0]:.2f} s)")
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
