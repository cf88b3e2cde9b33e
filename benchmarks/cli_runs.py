"""What the CLI benchmarks share: the repository on the path, offline Prefect settings, and running
`curate ... --json` as a user would, in a subprocess of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def curate(*args: str, env: dict[str, str]) -> dict:
    """`curate ARGS --json`: its JSON summary, or exit naming the command and its stderr."""
    done = subprocess.run([curate_exe(), *args, "--json"], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"curate {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
