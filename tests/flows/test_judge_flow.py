"""The real `judge` flow on Prefect's ephemeral API: a launched stand-in, the cache, shards, and a
judging process killed with SIGKILL part-way."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from flows.judge import JUDGE_SUMMARY_KEYS, judge
from schemas.summaries import JudgeSummary
from tasks.judge.endpoints import EndpointCheckError
from tasks.judge.server import ServerStartError
from testing.genrm_standin import StandinConfig, StandinProcess
from tests.flows.conftest import ingest_clean_pairs, killed_part_way
from tests.summary_checks import assert_summary
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture
def ingested(tmp_path, warehouse_path):
    n = ingest_clean_pairs(tmp_path, warehouse_path, 80, seed=21, pair_bytes=600)
    return warehouse_path, n


def _verdicts(path: Path) -> dict:
    with Warehouse(path, read_only=True) as wh:
        rows = wh.query('SELECT pair_id, "order", sample_index, status, score_1, score_2, ranking FROM judgments')
    return {(r[0], r[1], r[2]): r[3:] for r in rows}


def test_judge_with_a_launched_standin_then_a_rerun_costs_nothing(ingested, monkeypatch):
    path, n = ingested
    port = 18000 + random.randrange(1000)
    s = judge(strategy="swap", launch="standin", port=port, warehouse=str(path))
    assert set(JUDGE_SUMMARY_KEYS) <= set(s)
    assert_summary(s, JudgeSummary)
    assert (s["pairs"], s["judged"], s["failed"], s["skipped_cached"], s["requests"]) == (n, 2 * n, {}, 0, 2 * n)
    assert all("SIMULATED" in m for m in s["served_models"])
    verdicts = _verdicts(path)
    assert len(verdicts) == 2 * n and all(v[0] == "ok" for v in verdicts.values())
    # the launched server was stopped with the flow
    with pytest.raises(OSError):
        import urllib.request
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)

    with StandinProcess(StandinConfig(latency_mean=0.01)) as server:
        again = judge(endpoints=[server.url], strategy="swap", warehouse=str(path))
        # switching strategy reuses what is cached: `single` needs only the ab verdicts, already there
        single = judge(endpoints=[server.url], strategy="single", warehouse=str(path))
        assert server.stats()["requests"] == 0
    assert (again["requests"], again["skipped_cached"], again["judged"]) == (0, 2 * n, 0)
    assert_summary(again, JudgeSummary)
    assert single["requests"] == 0 and again["simulated"] and again["judge_config_id"] == s["judge_config_id"]
    # an endpoint that does not answer is refused at once, before any planning
    with pytest.raises(EndpointCheckError, match="no judge endpoint answers: http://127.0.0.1:9/v1"):
        judge(endpoints=["http://127.0.0.1:9/v1"], strategy="single", warehouse=str(path))


def test_shards_split_the_pending_pairs_without_overlap(ingested):
    path, n = ingested
    with StandinProcess(StandinConfig(latency_mean=0.01)) as server:
        first = judge(endpoints=[server.url], strategy="single", shard="0/2", warehouse=str(path))
        second = judge(endpoints=[server.url], strategy="single", shard="1/2", warehouse=str(path))
    assert first["pairs"] + second["pairs"] == n and first["pairs"] > 0 and second["pairs"] > 0
    assert len(_verdicts(path)) == n


def test_launch_vllm_without_vllm_is_a_clear_error(ingested):
    path, _ = ingested
    try:
        import vllm  # noqa: F401
        pytest.skip("vllm is installed here")
    except ImportError:
        pass
    with pytest.raises(ServerStartError, match="pip install 'preference-curator\\[gpu\\]'"):
        judge(launch="vllm", warehouse=str(path))


def test_sigkill_mid_run_then_rerun_equals_an_uninterrupted_run(tmp_path, ingested):
    """kill -9 the judging process at a random point: the rerun finishes, the verdicts equal an
    uninterrupted run's, and the stand-in saw at most one batch (plus what was in flight) twice."""
    path, n = ingested
    clean = tmp_path / "clean.duckdb"
    clean.write_bytes(path.read_bytes())
    batch, in_flight = 8, 4
    env = {**os.environ, "CURATE_JUDGE_WRITE_BATCH": str(batch), "CURATE_JUDGE_MAX_IN_FLIGHT": str(in_flight)}
    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    config = StandinConfig(capacity=in_flight, latency_mean=0.03, latency_sigma=0.2)

    with StandinProcess(config) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(clean))
        reference = _verdicts(clean)
        server.reset_stats()

        killed_part_way([curate, "judge", "--endpoint", server.url, "--strategy", "swap", "--warehouse", str(path),
                         "--json"], env, server, random.randint(n // 2, 3 * n // 2), timeout=120)
        killed_requests = server.stats()["requests"]
        with Warehouse(path, read_only=True) as wh:
            done_before = len(wh.query("SELECT 1 FROM judgments WHERE status = 'ok'"))
        assert 0 < killed_requests < 2 * n

        rerun = subprocess.run([curate, "judge", "--endpoint", server.url, "--strategy", "swap", "--warehouse",
                                str(path), "--json"], env=env, capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        summary = json.loads(rerun.stdout)
        total_requests = server.stats()["requests"]

    assert _verdicts(path) == reference
    assert summary["skipped_cached"] == done_before and summary["judged"] == 2 * n - done_before
    repeated = total_requests - 2 * n
    assert 0 <= repeated <= batch + in_flight, f"{repeated} judgments were paid for twice"


def test_adaptive_pairs_judged_once_on_purpose_are_kept_by_the_default_policy(ingested):
    from flows.versions import build_version

    path, n = ingested
    with StandinProcess(StandinConfig(latency_mean=0.005, position_bias=0.3)) as server:
        s = judge(endpoints=[server.url], strategy="adaptive", warehouse=str(path))
    assert n < s["requests"] < 2 * n  # the opposite order only where the first verdict was borderline
    made = build_version("adaptive-set", warehouse=str(path))
    assert "one_order_only" not in made["stats"]["dropped"]
    with Warehouse(path, read_only=True) as wh:
        one_order = wh.query("SELECT count(*) FROM dataset_rows WHERE name = 'adaptive-set' AND orders_agree IS NULL")
    assert one_order[0][0] > 0  # decisive single-order pairs are in the version


@pytest.fixture
def two_attempts(monkeypatch):
    """A judgment is exhausted after two answers without a verdict (the limit is 3 unless set)."""
    from common.settings import get_settings

    monkeypatch.setenv("CURATE_JUDGE_MAX_ATTEMPTS", "2")
    get_settings.cache_clear()
    yield 2
    get_settings.cache_clear()


def _status(path: Path) -> dict:
    with Warehouse(path, read_only=True) as wh:
        (row,) = wh.judging.judging_status(2)
    return row


def test_exhausted_by_a_garbage_judge_is_asked_again_with_the_flag_and_nothing_twice(ingested, two_attempts):
    """A judge answering garbage half the time exhausts some judgments; a rerun against a good judge asks them
    no more and says so; `retry_exhausted` asks exactly them again (never a stored verdict), and status counts
    the pairs at the limit apart from the pending ones."""
    path, n = ingested
    with StandinProcess(StandinConfig(latency_mean=0.005, malformed_rate=0.5, seed=5)) as garbage:
        for _ in range(two_attempts):
            judge(endpoints=[garbage.url], strategy="swap", warehouse=str(path))
    with Warehouse(path, read_only=True) as wh:
        (exhausted,) = wh.query("SELECT count(*) FROM judgments WHERE status = 'failed' AND attempts >= 2")[0]
        ok = wh.query("SELECT pair_id, \"order\", judge_run_id, margin_a FROM judgments WHERE status = 'ok'")
    assert 0 < exhausted < 2 * n and len(ok) == 2 * n - exhausted
    status = _status(path)
    assert status["pairs_exhausted"] > 0 and status["pairs_pending"] == 0
    assert status["pairs_judged"] + status["pairs_exhausted"] == n
    with StandinProcess(StandinConfig(latency_mean=0.005)) as good:
        plain = judge(endpoints=[good.url], strategy="swap", warehouse=str(path))
        assert good.stats()["requests"] == 0
        retried = judge(endpoints=[good.url], strategy="swap", warehouse=str(path), retry_exhausted=True)
        assert good.stats()["requests"] == exhausted  # exactly the judgments at the limit, once each
        again = judge(endpoints=[good.url], strategy="swap", warehouse=str(path), retry_exhausted=True)
        assert good.stats()["requests"] == exhausted
    assert_summary(retried, JudgeSummary)
    assert (plain["skipped_exhausted"], plain["reopened_exhausted"]) == (exhausted, 0)
    assert (retried["reopened_exhausted"], retried["judged"], retried["skipped_cached"]) == (exhausted, exhausted,
                                                                                             2 * n - exhausted)
    assert (again["reopened_exhausted"], again["requests"], again["skipped_cached"]) == (0, 0, 2 * n)
    with Warehouse(path, read_only=True) as wh:
        stored = wh.query("SELECT pair_id, \"order\", judge_run_id, margin_a FROM judgments WHERE judge_run_id <> ?",
                          [retried["run_id"]])
    assert sorted(stored) == sorted(ok)  # the verdicts stored before were left as they were
    assert (_status(path)["pairs_exhausted"], _status(path)["pairs_judged"]) == (0, n)
