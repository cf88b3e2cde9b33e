"""What the CLI benchmarks share: the repository on the path, offline Prefect settings, and running
`curate ... --json` as a user would, in a subprocess of its own."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
for key, value in (("DO_NOT_TRACK", "1"), ("PREFECT_SERVER_ANALYTICS_ENABLED", "false"),
                   ("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120"), ("HF_HUB_OFFLINE", "1")):
    os.environ.setdefault(key, value)


def curate_exe() -> str:
    return str(Path(sys.executable).with_name("curate"))


def bench_env(work: Path, *drop: str) -> dict[str, str]:
    """This process's environment with a Prefect home of the run's own and no CURATE_* override of ours."""
    env = {**os.environ, "PREFECT_HOME": str(work / "prefect-home")}
    for name in ("CURATE_WAREHOUSE", *drop):
        env.pop(name, None)
    return env


def curate(*args: str, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> dict:
    """`curate ARGS --json`: its JSON summary, or exit naming the command and its stderr (an exit code not in
    `ok`)."""
    done = subprocess.run([curate_exe(), *args, "--json"], capture_output=True, text=True, env=env, check=False)
    if done.returncode not in ok:
        raise SystemExit(f"curate {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children) of one call; exits naming it if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def clean_warehouse(work: Path, pairs: int, seed: int, env: dict[str, str]) -> str:
    """A warehouse in `work` holding `pairs` clean synthetic HelpSteer3 pairs (no bad rows, no duplicates), ingested
    by `curate ingest` as a user would: its path."""
    from tasks.ingest.synth import write_synth

    data, warehouse = work / "hs.jsonl", str(work / "w.duckdb")
    write_synth(data, "helpsteer3", pairs, seed=seed, bad_rate=0.0, exact_dup_rate=0.0, near_dup_rate=0.0)
    curate("ingest", "--source", "helpsteer3", "--path", str(data), "--warehouse", warehouse, env=env)
    return warehouse
