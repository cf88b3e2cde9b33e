"""A call with nothing to do is answered without Prefect; a call with work runs its flow on a temporary API
this command starts and stops. Real `curate` processes, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess

pytestmark = pytest.mark.prefect
CURATE = str(Path(sys.executable).with_name("curate"))


def curate(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CURATE, *args, "--json"], env=env, capture_output=True, text=True, timeout=300, check=False)


def summary(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def uvicorn_children_of_nobody_alive(before: set[int], prefect_home: Path) -> set[int]:
    """Prefect API servers (uvicorn over Prefect's app) of this environment's python and this test's PREFECT_HOME
    started since `before` and still running (another checkout's, or another test's running beside this one, are
    not this test's)."""
    ours = os.path.dirname(sys.executable).encode()
    home = f"PREFECT_HOME={prefect_home}".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in before:
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                if b"prefect.server.api.server:create_app" not in cmd or not cmd.startswith(ours):
                    continue
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if home in environ:
                found.add(int(entry))
    return found


@pytest.mark.skipif(not Path("/proc").exists(), reason="reads /proc")
def test_no_op_calls_need_no_prefect_api_and_calls_with_work_stop_theirs(tmp_path, prefect_home):
    env = {**os.environ, "PREFECT_HOME": str(prefect_home)}
    env.pop("PREFECT_API_URL", None)
    w = ["--warehouse", str(tmp_path / "w.duckdb")]
    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 60, seed=5, pair_bytes=500)
    before = uvicorn_children_of_nobody_alive(set(), prefect_home)
    with StandinProcess(StandinConfig(latency_mean=0.002)) as server:
        work = {
            "ingest": ["ingest", "--source", "helpsteer3", "--path", str(data), *w],
            "judge": ["judge", "--endpoint", server.url, *w],
            "build-version": ["build-version", "noop", *w],
            "publish": ["publish", "noop", "--to", str(tmp_path / "pub"), *w],
        }
        first = {name: summary(curate(env, *argv)) for name, argv in work.items()}
        assert first["ingest"]["new_pairs"] > 0 and first["judge"]["judged"] > 0
        assert first["build-version"]["new_version"] and not first["publish"]["already_published"]
        assert not uvicorn_children_of_nobody_alive(before, prefect_home), "a temporary Prefect API outlived its command"

        # No Prefect API can start now (a start-up time-out no server meets): the no-ops still answer.
        no_api = {**env, "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0"}
        again = {name: summary(curate(no_api, *argv)) for name, argv in work.items()}
        assert again["ingest"]["note"].startswith("unchanged:") and again["ingest"]["read"] == 0
        assert again["judge"]["judged"] == 0 and again["judge"]["requests"] == 0
        assert again["judge"]["skipped_cached"] == first["judge"]["judged"]
        assert again["build-version"]["version"] == 1 and not again["build-version"]["new_version"]
        assert again["publish"]["already_published"] and again["publish"]["target"] == first["publish"]["target"]
        assert again["publish"]["files"] == first["publish"]["files"]

        # A call with work does need the API, and says so in one line when it cannot start.
        forced = curate(no_api, *work["ingest"], "--force")
        assert forced.returncode != 0 and "did not answer within" in forced.stderr

    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    # The no-ops are recorded like any run: the ingest and judge runs that read and sent nothing.
    assert con.execute("SELECT count(*) FROM ingest_runs WHERE status = 'completed'").fetchone()[0] == 2
    assert con.execute("SELECT count(*), sum((summary->>'requests')::INT) FROM judge_runs "
                       "WHERE status = 'completed'").fetchone() == (2, first["judge"]["requests"])
    assert con.execute("SELECT count(*) FROM dataset_versions").fetchone()[0] == 1


def test_with_a_prefect_server_configured_a_no_op_is_a_flow_run_there(tmp_path, prefect_home):
    """PREFECT_API_URL names the server: a no-op goes to it (here a port nothing serves, so the call fails)
    instead of being answered aside."""
    env = {**os.environ, "PREFECT_HOME": str(prefect_home)}
    w = ["--warehouse", str(tmp_path / "w.duckdb")]
    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 20, seed=5, pair_bytes=500)
    summary(curate(env, "ingest", "--source", "helpsteer3", "--path", str(data), *w))
    check = [sys.executable, "-c", "from curator.noop import prefect_server_configured as c; print(c())"]
    assert subprocess.run(check, env=env, capture_output=True, text=True).stdout.strip() == "False"
    served = {**env, "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    assert subprocess.run(check, env=served, capture_output=True, text=True).stdout.strip() == "True"
    assert curate(served, "ingest", "--source", "helpsteer3", "--path", str(data), *w).returncode != 0
