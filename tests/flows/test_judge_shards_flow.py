"""Sharded judging without a warehouse on the worker side: plan, judge each shard from its work file,
merge; a worker killed mid-shard and run again judges only what it had not written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from flows.judge import judge_worker
from flows.judge_shards import merge_exchange, plan_shards
from tasks.judge.exchange import Exchange, read_work, result_files
from testing.genrm_standin import StandinConfig, StandinProcess
from tests.flows.conftest import ingest_clean_pairs
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture(autouse=True)
def simulated_workers(monkeypatch):
    """The workers here serve the stand-in: the orchestrator plans for simulated verdicts."""
    from common.settings import get_settings

    monkeypatch.setenv("CURATE_JUDGE_SIMULATED", "true")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def ingested(tmp_path, warehouse_path):
    n = ingest_clean_pairs(tmp_path, warehouse_path, 60, seed=33, pair_bytes=500)
    return str(warehouse_path), n


def _judgments(path):
    with Warehouse(path, read_only=True) as wh:
        return sorted(wh.query('SELECT pair_id, "order", sample_index, status, judge_run_id FROM judgments'))


def test_a_worker_refuses_a_shard_planned_for_another_kind_of_judge(tmp_path, ingested, monkeypatch):
    from common.settings import get_settings
    from tasks.judge.endpoints import EndpointCheckError

    monkeypatch.setenv("CURATE_JUDGE_SIMULATED", "false")  # planned for the real judge
    get_settings.cache_clear()
    path, _ = ingested
    plan = plan_shards(path, str(tmp_path / "exchange"), 1, "swap", None)
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        with pytest.raises(EndpointCheckError, match="serve the SIMULATED stand-in but the plan is for real"):
            judge_worker(next(iter(plan["work"].values())), endpoints=[server.url])
        assert server.stats()["requests"] == 0


def test_shards_judged_from_work_files_merge_once(tmp_path, ingested):
    path, n = ingested
    exchange = str(tmp_path / "exchange")
    plan = plan_shards(path, exchange, 3, "swap", None)
    assert plan["pending"] == n and sorted(plan["work"]) == [0, 1, 2]
    shard_pairs = [len(read_work(*Exchange.of_work(w)).pairs) for w in plan["work"].values()]
    assert sum(shard_pairs) == n and min(shard_pairs) > 0
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        summaries = [judge_worker(w, endpoints=[server.url]) for w in plan["work"].values()]
        assert server.stats()["requests"] == 2 * n  # every judgment asked once, over all shards
    assert sum(s["judged"] for s in summaries) == 2 * n
    assert _judgments(path) == []  # workers never touch the warehouse

    merged = merge_exchange(path, exchange)
    assert merged["rows"] == 2 * n and merged["files"] == len(result_files(Exchange(exchange))) and merged["run_records"] == 3
    after = _judgments(path)
    assert len(after) == 2 * n and {r[3] for r in after} == {"ok"}
    assert merge_exchange(path, exchange) == {"files": 0, "rows": 0, "run_records": 3, "rejected_rows": {},
                                              "quarantined": [], "authenticated": False}
    assert _judgments(path) == after
    with Warehouse(path, read_only=True) as wh:
        assert sorted(wh.query("SELECT shard, status FROM judge_runs")) == [("0/3", "completed"), ("1/3", "completed"),
                                                                              ("2/3", "completed")]
    # nothing is pending now: planning again writes no work
    assert plan_shards(path, exchange, 3, "swap", None)["work"] == {}


def test_a_worker_killed_mid_shard_then_rerun_judges_only_the_rest(tmp_path, ingested):
    path, n = ingested
    exchange = tmp_path / "exchange"
    work = plan_shards(path, str(exchange), 1, "swap", None)["work"][0]
    batch, in_flight = 8, 4
    env = {**os.environ, "CURATE_JUDGE_WRITE_BATCH": str(batch), "CURATE_JUDGE_MAX_IN_FLIGHT": str(in_flight)}
    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    with StandinProcess(StandinConfig(capacity=in_flight, latency_mean=0.03, latency_sigma=0.2)) as server:
        proc = subprocess.Popen([curate, "judge-shard", work, "--endpoint", server.url, "--json"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.time() + 120
        while server.stats()["completed"] < n and time.time() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        written = sum(pq.read_metadata(f.path).num_rows for f in result_files(Exchange(exchange)))
        assert 0 < written < 2 * n
        rerun = subprocess.run([curate, "judge-shard", work, "--endpoint", server.url, "--json"], env=env,
                               capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        summary = json.loads(rerun.stdout)
        total = server.stats()["requests"]
    assert summary["skipped_cached"] == written and summary["judged"] == 2 * n - written
    assert 0 <= total - 2 * n <= batch + in_flight, f"{total - 2 * n} judgments were paid for twice"
    merge_exchange(path, str(exchange))
    rows = _judgments(path)
    assert len(rows) == 2 * n and {r[3] for r in rows} == {"ok"}
    with Warehouse(path, read_only=True) as wh:  # the killed run's record stays 'running' until the pipeline says
        assert sorted(s for (s,) in wh.query("SELECT status FROM judge_runs")) == ["completed", "running"]


def test_sharding_without_the_deployment_is_a_clear_error(tmp_path, ingested):
    from flows.judge_shards import judge_sharded

    path, _ = ingested
    with pytest.raises(ValueError, match="no deployment 'judge-worker/judge'.*deploy --all"):
        judge_sharded(2, warehouse=path, exchange=str(tmp_path / "exchange"))
    assert not (tmp_path / "exchange").exists()  # refused before planning anything
