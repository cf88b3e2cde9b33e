"""Shared fixtures. Prefect runs on its ephemeral API in a temporary PREFECT_HOME, offline."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

# Set before anything imports Prefect or datasets.
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="prefect-home-"))
if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker's ephemeral API a database of its own
    os.environ["PREFECT_HOME"] = os.path.join(os.environ["PREFECT_HOME"], os.environ["PYTEST_XDIST_WORKER"])
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# datasets caches a local folder by its base name: a session of its own never reads an older session's files
os.environ.setdefault("HF_DATASETS_CACHE", tempfile.mkdtemp(prefix="hf-datasets-"))
# INFO lines logged at interpreter exit (the ephemeral server stopping) would hit pytest's closed streams.
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.pop("CURATE_WAREHOUSE", None)

import pytest

# Bind Prefect's console handler to the session's stderr now, not to the stream of whichever CliRunner
# invocation first logs (that stream is closed when its test ends).
from prefect.logging.configuration import setup_logging

from common.settings import Settings

setup_logging()

# the real vLLM server (CPU build) serving a tiny GenRM; skipped when no vLLM venv is given
pytest_plugins = ["tests.real_vllm"]

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CURATE_SHARED_DIR", REPO.parent / "shared"))


def shared_file(*parts: str) -> Path:
    """A file under ../shared/data, or a clean skip when the shared folder is absent."""
    path = SHARED.joinpath("data", *parts)
    if "acceptance" in path.name:
        raise RuntimeError("acceptance files are held back for acceptance checks")
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is absent on a fresh clone)")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A command run in-process (typer's CliRunner) turns its flags into CURATE_* variables of this process
    (curator.runner.apply_flags): what one test, or a module fixture set up for it, leaves there is gone before the
    next test, wherever the scheduler puts it."""
    from common.settings import get_settings

    before = {k: v for k, v in os.environ.items() if k.startswith("CURATE_")}
    try:
        return (yield)
    finally:
        for key in [k for k in os.environ if k.startswith("CURATE_") and k not in before]:
            del os.environ[key]
        os.environ.update(before)
        get_settings.cache_clear()


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def warehouse_path(tmp_path: Path) -> Path:
    return tmp_path / "warehouse.duckdb"


@contextlib.contextmanager
def _temporary_api_on(home: Path):
    """The URL of a temporary Prefect API (the one a command starts for itself) on PREFECT_HOME `home`, once it
    answers; stopped when the block ends."""
    from curator.prefect_api import TemporaryApi

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_HOME", str(home))
        mp.delenv("PREFECT_API_URL", raising=False)
        api = TemporaryApi().start()
    try:
        yield api.wait_ready(float(os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]))
    finally:
        api.stop()


@pytest.fixture(scope="session")
def new_prefect_home(tmp_path_factory):
    """`make(folder)`: a PREFECT_HOME of its own at `folder` (its commands' run records, logs and temporary APIs are
    its alone), holding a copy of Prefect's database as a first command leaves it (created, migrated, its block
    types registered). The copy is made once per worker, by starting and stopping a temporary API on a new home: a
    command's first use of a new home would otherwise spend about 7 s of its start-up on it (benchmarks/startup.py)."""
    import shutil
    import sqlite3

    template = tmp_path_factory.mktemp("prefect-db")
    with _temporary_api_on(template):
        pass
    with contextlib.closing(sqlite3.connect(template / "prefect.db")) as db:  # its write-ahead log into the file
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert not (template / "prefect.db-wal").exists()

    def make(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template / "prefect.db", folder / "prefect.db")
        return folder

    return make


@pytest.fixture
def prefect_home(tmp_path, new_prefect_home) -> Path:
    """A PREFECT_HOME of this test's own (see new_prefect_home)."""
    return new_prefect_home(tmp_path / "prefect-home")


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory, new_prefect_home):
    """The API URL of one Prefect server for this worker's session (the server a command starts for itself when
    none is configured, kept running): a command given it as PREFECT_API_URL runs its flows there, as under a
    deployment, and spends nothing on starting an API of its own (about 4 s of a command's start-up and 5 CPU-s,
    benchmarks/startup.py). For the tests whose subject is not that temporary API."""
    with _temporary_api_on(new_prefect_home(tmp_path_factory.mktemp("prefect-server"))) as url:
        yield url


@pytest.fixture(scope="session")
def dashboard_warehouse(tmp_path_factory) -> tuple[Path, Path, dict]:
    """A warehouse with every kind of record (ingest with bad rows, judging with failures, a version, a judge
    evaluation) and its dashboard snapshot; built once per session."""
    from flows.evaluate import evaluate_judge
    from flows.pipeline import curate_pipeline
    from tasks.ingest.synth import write_synth
    from testing.genrm_standin import StandinConfig, StandinProcess
    from warehouse.snapshot import snapshot_path

    tmp = tmp_path_factory.mktemp("dashboard")
    warehouse = tmp / "warehouse.duckdb"
    hs, arena = tmp / "hs.jsonl", tmp / "arena.jsonl"
    write_synth(hs, "helpsteer3", 150, seed=81, pair_bytes=400, bad_rate=0.1)
    write_synth(arena, "arena", 100, seed=82, pair_bytes=400, bad_rate=0.1)
    judgebench = tmp / "judgebench.jsonl"
    judgebench.write_text("".join(
        '{"pair_id": "p%d", "source": "livebench-math", "question": "q%d", "response_A": "a%d", '
        '"response_B": "b%d", "label": "A>B"}\n' % (i, i, i, i) for i in range(10)))
    with StandinProcess(StandinConfig(latency_mean=0.002, malformed_rate=0.05)) as server:
        summary = curate_pipeline(sources=[f"helpsteer3={hs}", f"arena={arena}"], endpoints=[server.url], dataset="dash",
                                  publish_to=str(tmp / "published"), warehouse=str(warehouse))
        evaluate_judge("judgebench", path=str(judgebench), endpoints=[server.url], warehouse=str(warehouse))
        # a second version under a looser policy (pairs added), which also refreshes the snapshot after the
        # evaluation, as `curate snapshot` would
        looser = tmp / "looser.toml"
        looser.write_text("min_abs_margin = 0.5\nrequire_order_agreement = false\n")
        curate_pipeline(skip=["ingest", "judge", "publish"], dataset="dash", policy_path=str(looser),
                        warehouse=str(warehouse))
    return warehouse, snapshot_path(warehouse), summary


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3-compatible server (moto's standalone server) in its own process on 127.0.0.1, with a bucket
    `exchange`; yields (endpoint URL, the environment a client on another host would be given)."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    env = {"AWS_ACCESS_KEY_ID": "curate-test", "AWS_SECRET_ACCESS_KEY": "curate-test-secret",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"moto server did not start (exit {proc.poll()})") from None
                time.sleep(0.2)
        req = urllib.request.Request(f"{endpoint}/exchange", method="PUT")
        urllib.request.urlopen(req, timeout=10).close()
        yield endpoint, env
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# What `pytest -m "not slow"` leaves out (the fast development selection, docs/tests-and-benchmarks.md): tests that
# start real servers or run flows end to end. The marks are given here, from the marks and folders tests already
# have, so no test file has to remember one more.
SLOW_MARKS = ("prefect", "deployment", "label_studio", "vllm")
# Under pytest-xdist (`-n 2`, as .ci/run runs), the tests that share one session's server run on one worker: each
# worker would otherwise start a Label Studio, or a vLLM server of 3 GB, of its own. So do the tests that share a
# built warehouse (a module-scoped fixture of their file, or one of SHARED_FIXTURES), which each worker would
# otherwise build again. Every other test goes to whichever worker is free.
SHARED_SERVER_MARKS = ("label_studio", "vllm")
SHARED_FIXTURES = ("dashboard_warehouse",)
GROUPS_DIR = "curate_test_groups"  # the controller's folder where each worker writes {nodeid: group}


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    groups = {}
    for item in items:
        if any(item.get_closest_marker(m) for m in SLOW_MARKS) or "tests/flows/" in item.nodeid.replace("\\", "/"):
            item.add_marker(slow)
        shared = next((m for m in SHARED_SERVER_MARKS if item.get_closest_marker(m)), None) or _shared_fixture(item)
        if shared:
            groups[item.nodeid] = shared
    folder = getattr(config, "workerinput", {}).get(GROUPS_DIR)
    if folder:  # an xdist worker: tell the controller's scheduler before it hands out the tests
        Path(folder, f"{config.workerinput['workerid']}.json").write_text(json.dumps(groups), encoding="utf-8")


def _shared_fixture(item) -> str | None:
    """The group of a test that uses a built warehouse other tests share, or None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in SHARED_FIXTURES:
        if name in info.names_closure:
            return name
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name) or ()
        if any(d.scope in ("module", "class") and d.baseid and item.nodeid.startswith(d.baseid) for d in defs):
            return item.nodeid.split("::")[0]
    return None


def _groups_dir(config) -> Path:
    if not hasattr(config, "_curate_groups_dir"):
        config._curate_groups_dir = Path(tempfile.mkdtemp(prefix="curate-test-groups-"))
    return config._curate_groups_dir


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput[GROUPS_DIR] = str(_groups_dir(node.config))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Tests one at a time to the free worker, save those of one shared server, which go to one worker together
    (xdist's own `--dist loadgroup` does this from `xdist_group` marks, but pytest 9.2's node ids no longer carry
    its group suffix: pytest-dev/pytest-xdist#1386)."""
    from xdist.scheduler import LoadScopeScheduling

    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None  # another --dist asked for by name: xdist's own
    folder = _groups_dir(config)

    class SharedServerScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # every worker has collected (and written its file) before the first call
                self.groups = {}
                for path in folder.glob("*.json"):
                    self.groups.update(json.loads(path.read_text(encoding="utf-8")))
            return self.groups.get(nodeid, nodeid)

    return SharedServerScheduling(config, log)
