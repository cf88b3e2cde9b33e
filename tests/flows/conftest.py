"""Flow-test helpers: a warehouse with clean synthetic pairs already ingested; a real Label Studio server."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.ingest import ingest
from tasks.ingest.synth import write_synth
from warehouse.store import Warehouse


def ingest_clean_pairs(folder: Path, warehouse: Path, rows: int, seed: int, pair_bytes: int = 500) -> int:
    """Ingest `rows` synthetic HelpSteer3 rows with no bad rows or duplicates; returns the curation pairs."""
    data = folder / "hs.jsonl"
    write_synth(data, "helpsteer3", rows, seed=seed, pair_bytes=pair_bytes, bad_rate=0.0, exact_dup_rate=0.0,
                near_dup_rate=0.0)
    ingest("helpsteer3", path=str(data), warehouse=str(warehouse))
    with Warehouse(warehouse, read_only=True) as wh:
        return wh.counts()["pairs_for_curation"]


def judged_as_source(folder: Path, name: str, source, rows: int, seed: int,
                     pair_bytes: int) -> tuple[Path, Path]:
    """(a warehouse, its rows' file): `rows` clean synthetic HelpSteer3 rows ingested as `source` under `name` (the
    code taught it for the ingest alone), then judged `swap` by the stand-in."""
    from flows.judge import judge
    from tasks.ingest.sources import SOURCES
    from testing.genrm_standin import StandinConfig, StandinProcess

    path, data = folder / "warehouse.duckdb", folder / "rows.jsonl"
    write_synth(data, "helpsteer3", rows, seed=seed, pair_bytes=pair_bytes, bad_rate=0.0, exact_dup_rate=0.0,
                near_dup_rate=0.0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(SOURCES, name, source)
        ingest(name, path=str(data), warehouse=str(path))
    with StandinProcess(StandinConfig(latency_mean=0.002, capacity=128)) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(path))
    return path, data


def killed_part_way(argv: list[str], env: dict[str, str], server, completed: int, timeout: float = 240) -> None:
    """Run `argv` in a process group of its own (SIGKILL then reaches it and the Prefect server it started) and kill
    it with SIGKILL once the stand-in `server` has completed `completed` requests."""
    import os
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + timeout
    while server.stats()["completed"] < completed and time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def judged_version(folder: Path, name: str, rows: int, seed: int, pair_bytes: int = 500,
                   **standin) -> tuple[Path, dict]:
    """A warehouse in `folder` with `rows` clean pairs judged by the stand-in (both orders) and version 1 of
    `name` built from them: (its path, the version's summary)."""
    from flows.judge import judge
    from flows.versions import build_version
    from testing.genrm_standin import StandinConfig, StandinProcess

    warehouse = folder / "warehouse.duckdb"
    ingest_clean_pairs(folder, warehouse, rows, seed, pair_bytes)
    with StandinProcess(StandinConfig(latency_mean=0.002, capacity=128, **standin)) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(warehouse))
    return warehouse, build_version(name, warehouse=str(warehouse))


# -- a real Label Studio server -----------------------------------------------------------------------
LABEL_STUDIO_ENV = "CURATE_TEST_LABEL_STUDIO"  # the python of a venv with label-studio (.ci/run installs one)
LABEL_STUDIO_BASE_ENV = "CURATE_TEST_LABEL_STUDIO_BASE"  # a migrated data folder with no user (tests/label_studio_base.py)


class LabelStudioServer:
    """A Label Studio started for the test session: its URL, the admin's token, and reviewers who join it."""

    def __init__(self, url: str, token: str):
        self.url, self.token = url, token

    def admin(self):
        import httpx2

        return httpx2.Client(base_url=self.url, headers={"Authorization": f"Token {self.token}"}, timeout=60)

    def reviewer(self, email: str, password: str = "reviewer-password-1"):
        """A reviewer who joins through the organization's invite link, as a person would, and reads their token
        from their account: an HTTP client that acts as them."""
        import re

        import httpx2

        with self.admin() as admin:
            invite = admin.get("/api/invite").json()
        token = re.search(r"token=([^&]+)", invite["invite_url"]).group(1)
        with httpx2.Client(base_url=self.url, timeout=60) as browser:
            browser.get(f"/user/signup/?token={token}")
            csrf = browser.cookies.get("csrftoken")
            signed = browser.post(f"/user/signup/?token={token}", headers={"Referer": f"{self.url}/user/signup/",
                                                                            "X-CSRFToken": csrf},
                                  data={"email": email, "password": password, "csrfmiddlewaretoken": csrf})
            assert signed.status_code in (200, 302), signed.text[:300]
            key = browser.get("/api/current-user/token").json()["token"]
        return httpx2.Client(base_url=self.url, headers={"Authorization": f"Token {key}"}, timeout=60)


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory):
    """A real Label Studio (Django + SQLite) on 127.0.0.1, in a data directory of its own, its admin user and
    API token made non-interactively; started once per session from the python in CURATE_TEST_LABEL_STUDIO
    (skipped when that is not set), on a copy of the migrated folder in CURATE_TEST_LABEL_STUDIO_BASE when one is
    given, stopped with its process group (tests/label_studio_base.py)."""
    import os
    import secrets
    import shutil

    from tests.label_studio_base import running

    python = os.environ.get(LABEL_STUDIO_ENV)
    if not python or not Path(python).is_file():
        pytest.skip(f"no Label Studio to test against: set {LABEL_STUDIO_ENV} to the python of a venv with "
                    "label-studio installed (.ci/run does)")
    folder = tmp_path_factory.mktemp("label-studio")
    token = secrets.token_hex(20)
    env = {**os.environ, "LABEL_STUDIO_USERNAME": "curator@example.com", "LABEL_STUDIO_PASSWORD": secrets.token_hex(12),
           "LABEL_STUDIO_USER_TOKEN": token, "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true"}
    base = os.environ.get(LABEL_STUDIO_BASE_ENV)
    if base and Path(base, "label_studio.sqlite3").is_file():  # migrated beforehand: a start of seconds, not 30 s
        shutil.copytree(base, folder / "base")
    with running(python, folder, env) as url:
        yield LabelStudioServer(url, token)
