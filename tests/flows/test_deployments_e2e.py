"""The deployments on a real Prefect server: `prefect server start` on 127.0.0.1, the two work pools,
`prefect --no-prompt deploy --all` from this checkout, two process workers on the `gpu` pool (each with its
own GenRM stand-in, SIMULATED verdicts, and its own working directory) and one on `cpu`; then the nightly
pipeline deployment, a rerun, a GPU worker killed mid-shard, and two pipeline runs at once. The judge
exchange is object storage (a real S3-compatible server, moto's, started here): orchestrator and workers
share no path, and every process reads the storage credentials from a Prefect Secret block. Every process
started here is stopped by id."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from flows.judge_shards import merge_exchange
from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess
from warehouse.store import Warehouse

pytestmark = [pytest.mark.prefect, pytest.mark.deployment]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WRITE_BATCH, IN_FLIGHT = 8, 4
EXCHANGE_BLOCK = "judge-exchange-s3"
EXCHANGE_URL = "s3://exchange/e2e"


def _storage_options(s3_server) -> dict:
    endpoint, env = s3_server
    return {"key": env["AWS_ACCESS_KEY_ID"], "secret": env["AWS_SECRET_ACCESS_KEY"],
            "client_kwargs": {"endpoint_url": endpoint, "region_name": env["AWS_DEFAULT_REGION"]}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """Every process under `pid` (flow runs may sit in their own process group)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill_tree(proc: subprocess.Popen, graceful: bool = True) -> None:
    """Stop a process and everything under it. A Prefect worker ignores the first SIGTERM: send two."""
    if proc.poll() is not None:
        return
    tree = _descendants(proc.pid)
    if graceful:
        for _ in range(2):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                break
            time.sleep(0.5)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            pass
    for pid in [proc.pid, *tree]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(10)


class Cluster:
    """A Prefect server, its pools and deployments, and the workers; REST calls for the test."""

    def __init__(self, tmp: Path, prefect_home: Path):
        self.tmp = tmp
        self.port = _free_port()
        self.api = f"http://127.0.0.1:{self.port}/api"
        self.env = {
            **os.environ, "PREFECT_HOME": str(prefect_home), "PREFECT_API_URL": self.api,
            "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "INFO", "PREFECT_WORKER_QUERY_SECONDS": "1", "HF_HUB_OFFLINE": "1",
            "CURATE_PROJECT_DIR": str(REPO), "CURATE_JUDGE_SHARD_POLL_SECONDS": "0.5",
            "CURATE_JUDGE_WRITE_BATCH": str(WRITE_BATCH), "CURATE_JUDGE_MAX_IN_FLIGHT": str(IN_FLIGHT),
            # the GPU workers serve the stand-in: the orchestrator plans for simulated verdicts
            "CURATE_JUDGE_SIMULATED": "true",
            # the exchange's storage credentials: a Prefect Secret block, the same for every process
            "CURATE_JUDGE_EXCHANGE_BLOCK": EXCHANGE_BLOCK,
        }
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "CURATE_JUDGE_EXCHANGE_OPTIONS"):
            self.env.pop(key, None)  # nothing but the block tells a process how to reach the storage
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], cwd: Path = REPO, **env: str) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")
        proc = subprocess.Popen(argv, env={**self.env, **env}, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                start_new_session=True)
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def cli(self, *args: str) -> str:
        done = subprocess.run([str(BIN / "prefect"), *args], env=self.env, cwd=REPO, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    def rest(self, method: str, path: str, body: dict | None = None) -> dict:
        """One API call; like Prefect's own client, 503 and 429 (a busy server on 2 cores) are retried."""
        for attempt in range(8):
            req = urllib.request.Request(self.api + path, method=method, data=json.dumps(body or {}).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    return json.loads(resp.read() or b"{}")
            except urllib.error.HTTPError as err:
                if err.code not in (429, 503) or attempt == 7:
                    raise
                time.sleep(float(err.headers.get("Retry-After") or 2 ** attempt))
        raise AssertionError("unreachable")

    def wait_healthy(self, timeout: float = 180) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.procs["server"].poll() is None, self.log("server")[-3000:]
            try:
                with urllib.request.urlopen(f"{self.api}/health", timeout=2):
                    return
            except OSError:
                time.sleep(1)
        raise AssertionError("prefect server not healthy in time:\n" + self.log("server")[-3000:])

    def run_pipeline(self, **parameters) -> str:
        deployment = self.rest("GET", "/deployments/name/curate-pipeline/nightly")
        run = self.rest("POST", f"/deployments/{deployment['id']}/create_flow_run", {"parameters": parameters})
        return run["id"]

    def wait_final(self, flow_run_id: str, timeout: float = 300) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            run = self.rest("GET", f"/flow_runs/{flow_run_id}")
            if run["state"]["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                return run
            time.sleep(0.5)
        raise AssertionError(f"flow run {flow_run_id} not final in {timeout} s: {run['state']}")

    def gpu_worker(self, name: str, endpoint: str) -> subprocess.Popen:
        """A GPU worker in a working directory of its own (a host of its own, as far as paths go)."""
        home = self.tmp / f"host-{name}"
        home.mkdir(exist_ok=True)
        return self.start(name, [str(BIN / "prefect"), "worker", "start", "--pool", "gpu", "--limit", "1",
                                 "--name", name], cwd=home, CURATE_JUDGE_ENDPOINTS=json.dumps([endpoint]))

    def stop(self) -> None:
        for name, proc in reversed(list(self.procs.items())):
            _kill_tree(proc)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, s3_server, new_prefect_home):
    tmp = tmp_path_factory.mktemp("prefect-e2e")
    c = Cluster(tmp, new_prefect_home(tmp / "prefect-home"))
    standins = [StandinProcess(StandinConfig(capacity=IN_FLIGHT, latency_mean=0.05, latency_sigma=0.2, seed=s))
                for s in (1, 2)]
    try:
        c.start("server", [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(c.port)])
        c.wait_healthy()
        c.cli("work-pool", "create", "gpu", "--type", "process")
        c.cli("work-pool", "create", "cpu", "--type", "process")
        c.cli("--no-prompt", "deploy", "--all")
        saved = subprocess.run(
            [sys.executable, "-c", "import json, sys; from prefect.blocks.system import Secret; "
             f"Secret(value=json.loads(sys.stdin.read())).save({EXCHANGE_BLOCK!r}, overwrite=True)"],
            input=json.dumps(_storage_options(s3_server)), env=c.env, cwd=REPO, capture_output=True, text=True,
            timeout=120)
        assert saved.returncode == 0, saved.stderr[-3000:]
        for s in standins:
            s.__enter__()
        c.standins = {"gpu-a": standins[0], "gpu-b": standins[1]}
        c.gpu_worker("gpu-a", standins[0].url)
        c.gpu_worker("gpu-b", standins[1].url)
        c.start("cpu", [str(BIN / "prefect"), "worker", "start", "--pool", "cpu", "--name", "cpu"])
        yield c
    finally:
        c.stop()
        for s in standins:
            s.__exit__(None, None, None)


def _requests(cluster) -> int:
    return sum(s.stats()["requests"] for s in cluster.standins.values())


def _judgments(path: Path) -> list[tuple]:
    with Warehouse(path, read_only=True) as wh:
        return sorted(wh.query('SELECT * EXCLUDE (finished_at) FROM judgments'))


def _curation_pairs(path: Path) -> int:
    with Warehouse(path, read_only=True) as wh:
        return wh.counts()["pairs_for_curation"]


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipeline-data")
    return {"warehouse": tmp / "warehouse.duckdb", "exchange": EXCHANGE_URL, "published": tmp / "published",
            "data": tmp}


@pytest.fixture
def exchange_credentials(s3_server, monkeypatch):
    """This test process reads the exchange too (to replay merges): the same options, from the environment."""
    monkeypatch.setenv("CURATE_JUDGE_EXCHANGE_OPTIONS", json.dumps(_storage_options(s3_server)))


def _params(paths, *files, **more):
    return {"sources": [f"helpsteer3={f}" for f in files], "warehouse": str(paths["warehouse"]),
            "exchange": paths["exchange"], "publish_to": str(paths["published"]), "dataset": "nightly-e2e",
            "strategy": "swap", **more}


def test_nightly_deployment_judges_every_pending_pair_once_and_publishes(cluster, paths, exchange_credentials):
    first = paths["data"] / "first.jsonl"
    write_synth(first, "helpsteer3", 120, seed=71, pair_bytes=500, bad_rate=0.0, near_dup_rate=0.0)
    before = _requests(cluster)
    run = cluster.wait_final(cluster.run_pipeline(**_params(paths, first)))
    assert run["state"]["type"] == "COMPLETED", run["state"]["message"] + cluster.log("cpu")[-4000:]
    n = _curation_pairs(paths["warehouse"])
    rows = _judgments(paths["warehouse"])
    assert n > 0 and len(rows) == 2 * n  # every pending pair, both orders
    assert {r[4] for r in rows} == {"ok"} and len({(r[0], r[2]) for r in rows}) == 2 * n
    assert _requests(cluster) - before == 2 * n  # each judgment asked exactly once, over both GPU workers
    with Warehouse(paths["warehouse"], read_only=True) as wh:
        runs = wh.query("SELECT shard, status FROM judge_runs ORDER BY shard")
        version = wh.versions.versions("nightly-e2e")
    assert runs == [("0/2", "completed"), ("1/2", "completed")]
    assert len(version) == 1 and version[0]["published_target"]
    assert list(paths["published"].glob("nightly-e2e/v1-*/data/*"))
    # shard runs are the pipeline's subflows, on the gpu pool
    shard_runs = cluster.rest("POST", "/flow_runs/filter", {"flow_runs": {"name": {"like_": "judge "}}})
    assert len(shard_runs) == 2 and {r["state"]["type"] for r in shard_runs} == {"COMPLETED"}
    # the work went through object storage: each shard run was handed an s3:// URL, and no host has the
    # exchange on its disk
    assert all(r["parameters"]["work"].startswith(EXCHANGE_URL + "/plans/") for r in shard_runs)
    assert not list(cluster.tmp.rglob("*.parquet"))  # the workers' own directories hold no exchange file

    # replaying the merge changes nothing: once as recorded, once forgetting every file was merged
    assert merge_exchange.fn(str(paths["warehouse"]), paths["exchange"])["files"] == 0
    with Warehouse(paths["warehouse"]) as wh:
        wh.query("DELETE FROM merged_result_files")
    replay = merge_exchange.fn(str(paths["warehouse"]), paths["exchange"])
    assert replay["rows"] == 2 * n and _judgments(paths["warehouse"]) == rows


def test_a_rerun_on_unchanged_sources_judges_nothing_and_makes_no_version(cluster, paths):
    first = paths["data"] / "first.jsonl"
    before = _requests(cluster)
    run = cluster.wait_final(cluster.run_pipeline(**_params(paths, first)))
    assert run["state"]["type"] == "COMPLETED", run["state"]["message"]
    assert _requests(cluster) == before
    with Warehouse(paths["warehouse"], read_only=True) as wh:
        assert len(wh.versions.versions("nightly-e2e")) == 1


def test_a_gpu_worker_killed_mid_shard_then_the_rerun_finishes_without_rejudging(cluster, paths):
    second = paths["data"] / "second.jsonl"
    write_synth(second, "helpsteer3", 400, seed=72, pair_bytes=400, bad_rate=0.0, near_dup_rate=0.0)
    first = paths["data"] / "first.jsonl"
    judged_before = len(_judgments(paths["warehouse"]))
    counts = {name: s.stats()["requests"] for name, s in cluster.standins.items()}
    run_id = cluster.run_pipeline(**_params(paths, first, second, stale_seconds=15))

    # wait until one GPU worker is well into its shard, then kill it and everything it started
    deadline, victim = time.time() + 180, None
    while victim is None and time.time() < deadline:
        for name, s in cluster.standins.items():
            if s.stats()["completed"] - counts[name] >= 120:
                victim = name
                break
        time.sleep(0.05)
    assert victim, "no shard got going"
    _kill_tree(cluster.procs[victim], graceful=False)
    run = cluster.wait_final(run_id, timeout=300)
    assert run["state"]["type"] == "FAILED"
    assert "did not finish" in run["state"]["message"] or "did not finish" in cluster.log("cpu")

    with Warehouse(paths["warehouse"], read_only=True) as wh:
        lost = wh.query("SELECT count(*) FROM judge_runs WHERE status = 'lost'")[0][0]
        partial = len(wh.query("SELECT 1 FROM judgments WHERE status = 'ok'"))
    assert lost == 1 and partial > judged_before

    # a replacement worker for that host, then the rerun
    cluster.gpu_worker(victim + "-2", cluster.standins[victim].url)
    requests_before_rerun = _requests(cluster)
    rerun = cluster.wait_final(cluster.run_pipeline(**_params(paths, first, second, stale_seconds=15)))
    assert rerun["state"]["type"] == "COMPLETED", rerun["state"]["message"]
    n = _curation_pairs(paths["warehouse"])
    rows = _judgments(paths["warehouse"])
    assert len(rows) == 2 * n and {r[4] for r in rows} == {"ok"}
    # the rerun asked only for what was missing after merging the killed shard's finished part
    assert _requests(cluster) - requests_before_rerun == 2 * n - partial
    # over both runs, at most one unwritten batch and the requests in flight were paid twice
    total = _requests(cluster) - sum(counts.values())
    assert 0 <= total - (2 * n - judged_before) <= WRITE_BATCH + IN_FLIGHT


def test_two_pipeline_runs_at_once_one_runs_the_other_stops_clearly(cluster, paths):
    third = paths["data"] / "third.jsonl"
    write_synth(third, "helpsteer3", 300, seed=73, pair_bytes=400, bad_rate=0.0, near_dup_rate=0.0)
    files = [paths["data"] / "first.jsonl", paths["data"] / "second.jsonl", third]
    with Warehouse(paths["warehouse"], read_only=True) as wh:
        versions_before = [v["version"] for v in wh.versions.versions("nightly-e2e")]
    a = cluster.run_pipeline(**_params(paths, *files))
    b = cluster.run_pipeline(**_params(paths, *files))
    runs = [cluster.wait_final(a), cluster.wait_final(b)]
    states = sorted(r["state"]["type"] for r in runs)
    assert states == ["COMPLETED", "FAILED"], [r["state"] for r in runs]
    failed = next(r for r in runs if r["state"]["type"] == "FAILED")
    assert "is using the warehouse" in failed["state"]["message"]
    n = _curation_pairs(paths["warehouse"])
    rows = _judgments(paths["warehouse"])
    assert len(rows) == 2 * n and {r[4] for r in rows} == {"ok"}
    with Warehouse(paths["warehouse"], read_only=True) as wh:
        # exactly one new version: the run that stopped made nothing
        assert [v["version"] for v in wh.versions.versions("nightly-e2e")] == versions_before + [versions_before[-1] + 1]


def test_a_key_on_the_orchestrator_only_fails_the_night_before_any_request(cluster, paths, tmp_path):
    """`curate run --shards 2` on a host holding CURATE_JUDGE_EXCHANGE_KEY, the gpu workers holding none: each
    worker refuses its signed work file before judging, and the command exits 2 in one line naming the key."""
    data = tmp_path / "keyed.jsonl"
    write_synth(data, "helpsteer3", 40, seed=74, pair_bytes=300, bad_rate=0.0, near_dup_rate=0.0)
    before = _requests(cluster)
    env = {**cluster.env, "CURATE_JUDGE_EXCHANGE_KEY": "orchestrator-only", "CURATE_JUDGE_EXCHANGE": "s3://exchange/keyed",
           "CURATE_JUDGE_SHARD_STALE_SECONDS": "60"}
    done = subprocess.run([str(BIN / "curate"), "run", "--source", f"helpsteer3={data}", "--shards", "2",
                           "--warehouse", str(tmp_path / "keyed.duckdb"), "--publish-to", str(tmp_path / "published"),
                           "--dataset", "keyed-e2e", "--strategy", "swap"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: 2 of 2 judge shards did not finish"), done.stderr[-3000:]
    assert "CURATE_JUDGE_EXCHANGE_KEY" in lines[0] and "a key on one side only" in lines[0]
    assert _requests(cluster) == before  # the stand-ins' /stats: not one request paid for
    with Warehouse(tmp_path / "keyed.duckdb", read_only=True) as wh:
        assert wh.query("SELECT count(*) FROM judgments") == [(0,)] and not wh.versions.versions("keyed-e2e")


CERTIFIED_ROWS = 1200  # as tests/flows/test_judge_rounds.py: enough clear labels for the p_correct model to decide


def test_the_nightly_deployment_curates_a_declared_source_certified_in_rounds(cluster, tmp_path):
    """A source declared in a sources file (pairwise rows with a vote column, no code), its rows written by
    `curate synth NAME`, run by the nightly deployment with `certify:2` toward a policy's target: each round's
    shards judged on the gpu pool, fewer requests than both orders of every pair, and a version whose card states
    its certified agreement and whose pairs carry the declared source's name and license."""
    rows = tmp_path / "exports" / "pairs.jsonl"
    declared = tmp_path / "sources.toml"
    declared.write_text(
        '[sources.team-pairs]\npath = "exports/pairs.jsonl"\nformat = "pairwise"\n'
        'columns = { prompt = "question", response_a = "answer_1", response_b = "answer_2", preference = "winner" }\n'
        'label = { a = "1", b = "2", tie = ["tie"], both_bad = ["neither"] }\nlicense = "internal"\nhuman_labels = true\n',
        encoding="utf-8")
    made = subprocess.run([str(BIN / "curate"), "synth", "team-pairs", str(rows), "--rows", str(CERTIFIED_ROWS),
                           "--seed", "75", "--pair-bytes", "400", "--bad-rate", "0", "--exact-dup-rate", "0",
                           "--near-dup-rate", "0", "--sources-file", str(declared)],
                          env=cluster.env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    policy = tmp_path / "certified.toml"
    policy.write_text("[policy]\ntarget_agreement = 0.9\n", encoding="utf-8")
    warehouse, published = tmp_path / "declared.duckdb", tmp_path / "published"
    before = _requests(cluster)
    run = cluster.wait_final(cluster.run_pipeline(
        sources=["team-pairs"], sources_file=str(declared), warehouse=str(warehouse), exchange=EXCHANGE_URL + "-certify",
        publish_to=str(published), dataset="certified-e2e", strategy="certify:2", policy_path=str(policy)),
        timeout=900)
    assert run["state"]["type"] == "COMPLETED", run["state"]["message"] + cluster.log("cpu")[-4000:]
    n = _curation_pairs(warehouse)
    paid = _requests(cluster) - before
    with Warehouse(warehouse, read_only=True) as wh:
        (version,) = wh.versions.versions("certified-e2e")
        sources = wh.query("SELECT DISTINCT source FROM pair_sightings")
        facts = wh.sources.source_facts()["team-pairs"]
        judge_runs = wh.query("SELECT count(*) FROM judge_runs")[0][0]
    assert n > 1000 and sources == [("team-pairs",)] and json.loads(facts["facts"])["license"] == "internal"
    assert 0 < paid < 2 * n  # one order for every pair, more only where a pair could still be certified
    # two shards a round; a second round only where a pair is not yet sure and could still be certified (pairs whose
    # first verdict is decisive stop there: docs/certification.md)
    assert judge_runs >= 2
    cert = json.loads(version["figures"])["certification"] if isinstance(version["figures"], str) else \
        version["figures"]["certification"]
    assert cert["target_agreement"] == 0.9 and 0 < cert["coverage"] <= 1
    (card,) = published.glob("certified-e2e/v1-*/README.md")
    assert re.search(r"At least 90\.0% of the [\d,]+ certified pairs \([^)]*\) have chosen answers that agree with "
                     r"human preference, with 95% confidence", card.read_text())
    shard_runs = cluster.rest("POST", "/flow_runs/filter", {"flow_runs": {"name": {"like_": "judge "}}})
    assert any(r["parameters"]["work"].startswith(EXCHANGE_URL + "-certify/") for r in shard_runs)
