"""`curate judge --estimate` and `--budget-gpu-hours` through the CLI against the stand-in (SIMULATED): the estimate
sends no judging request; a run stopped at its budget exits 3 with one line, and a rerun with a larger budget
completes without asking a stored judgment again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testing.genrm_standin import StandinConfig, StandinProcess
from tests.flows.conftest import ingest_clean_pairs
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

CURATE = str(Path(sys.executable).with_name("curate"))


def test_an_estimate_sends_nothing_and_a_budget_stop_resumes_without_paying_twice(tmp_path, prefect_server):
    warehouse = tmp_path / "w.duckdb"
    pairs = ingest_clean_pairs(tmp_path, warehouse, 300, seed=43)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(warehouse), "PREFECT_API_URL": prefect_server,
           "CURATE_JUDGE_WRITE_BATCH": "8",  # judgments stored 8 at a time
           "CURATE_COST_SERVER_TOKENS_PER_SECOND": "1e9"}  # declared: far cheaper than the stand-in is

    def curate(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([CURATE, "judge", *args, "--json"], env=env, capture_output=True, text=True,
                              timeout=900)

    def last_json(done: subprocess.CompletedProcess) -> dict:
        return json.loads(done.stdout.strip().splitlines()[-1])

    with StandinProcess(StandinConfig(latency_mean=0.2, latency_sigma=0.05, capacity=64)) as genrm:
        est = curate("--endpoint", genrm.url, "--strategy", "swap", "--gpus", "1", "--estimate")
        assert est.returncode == 0, est.stderr[-3000:]
        estimate = last_json(est)["estimate"]
        assert genrm.stats()["requests"] == 0  # nothing was sent
        assert estimate["requests"] == {"low": 2 * pairs, "high": 2 * pairs, "expected": 2 * pairs}
        assert 0 < estimate["gpu_hours"]["low"] <= estimate["gpu_hours"]["high"]
        assert estimate["rungs"][0]["basis"].startswith("declared")

        # 600 requests of 0.2 s, at most 64 at once, keep one GPU busy at least 1.9 s; 0.6 GPU-seconds stop the
        # run within it, as it goes (one dispatch: no batch waits for its slowest request)
        stopped = curate("--endpoint", genrm.url, "--strategy", "swap", "--gpus", "1",
                         "--budget-gpu-hours", str(0.6 / 3600))
        assert stopped.returncode == 3, stopped.stderr[-3000:]
        line = [t for t in stopped.stderr.splitlines() if "budget" in t]
        assert len(line) == 1 and "spent" in line[0] and "left" in line[0] and "(expected " in line[0]
        first = last_json(stopped)
        assert first["budget"]["stopped"] and first["budget"]["left_gpu_hours"] >= 0
        sent = genrm.stats()["requests"]
        with Warehouse(warehouse, read_only=True) as wh:
            stored = wh.query("SELECT count(*) FROM judgments WHERE status = 'ok'")[0][0]
        assert 0 < sent == stored < 2 * pairs  # judgments are stored as they land
        assert first["cost"]["by_judge"]["genrm"]["dispatches"] == 1

        again = curate("--endpoint", genrm.url, "--strategy", "swap", "--gpus", "1", "--budget-gpu-hours", "1")
        assert again.returncode == 0, again.stderr[-3000:]
        second = last_json(again)
        assert not second["budget"]["stopped"] and second["skipped_cached"] == stored
        assert genrm.stats()["requests"] == 2 * pairs  # no judgment asked twice

        measured = last_json(curate("--endpoint", genrm.url, "--strategy", "swap", "--gpus", "1", "--estimate"))
        assert measured["estimate"]["requests"]["high"] == 0 and genrm.stats()["requests"] == 2 * pairs


def test_a_ladders_estimate_names_the_reward_models_rung_then_the_genrms_and_asks_neither(tmp_path, prefect_server):
    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    warehouse = tmp_path / "w.duckdb"
    pairs = ingest_clean_pairs(tmp_path, warehouse, 60, seed=44)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(warehouse), "PREFECT_API_URL": prefect_server}
    with StandinProcess(StandinConfig()) as genrm, RewardStandinProcess(RewardStandinConfig()) as rm:
        done = subprocess.run([CURATE, "judge", "--strategy", "ladder", "--rm-endpoint", rm.url, "--endpoint",
                               genrm.url, "--rm-gpus", "2", "--target-agreement", "0.9", "--estimate",
                               "--json"], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        said = subprocess.run(done.args[:-1], env=env, capture_output=True, text=True, timeout=600)
        assert genrm.stats()["requests"] == 0 and rm.stats()["requests"] == 0
    # the pairs lack the reward model's scores: the text says how to make the GenRM's first rung exact
    assert said.returncode == 0 and "`--reward-model-only` first makes its first rung" in " ".join(said.stdout.split())
    estimate = json.loads(done.stdout.strip().splitlines()[-1])["estimate"]
    rungs = estimate["rungs"]
    assert rungs[0]["judge"] == "reward_model" and rungs[0]["requests"] == {"low": pairs, "high": pairs}
    assert all(r["judge"] == "genrm" and r["requests"]["low"] == 0 for r in rungs[1:]) and len(rungs) >= 3
    assert estimate["gpu_hours"]["low"] == pytest.approx(rungs[0]["gpu_hours"]["low"], abs=1e-9)
    assert estimate["gpu_hours"]["high"] > estimate["gpu_hours"]["low"] > 0
    assert all(r["basis"].startswith("declared") for r in rungs)


def test_a_ladder_stopped_at_its_budget_on_the_reward_models_rung_resumes_without_paying_twice(tmp_path,
                                                                                             prefect_server):
    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    warehouse = tmp_path / "w.duckdb"
    pairs = ingest_clean_pairs(tmp_path, warehouse, 200, seed=45)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(warehouse), "PREFECT_API_URL": prefect_server,
           "CURATE_COST_SERVER_TOKENS_PER_SECOND": "1e9"}

    def ladder(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([CURATE, "judge", "--strategy", "ladder", "--rm-endpoint", rm.url, "--endpoint",
                               genrm.url, "--target-agreement", "0.9", "--rm-gpus", "1", *args, "--json"], env=env,
                              capture_output=True, text=True, timeout=900)

    # 200 scores of 0.2 s keep the reward model's one GPU busy at least 0.2 s, and longer while its concurrency
    # grows from 8; 0.3 GPU-seconds stop it within its rung, before the GenRM is asked anything
    with (StandinProcess(StandinConfig()) as genrm,
          RewardStandinProcess(RewardStandinConfig(latency_mean=0.2, latency_sigma=0.05)) as rm):
        stopped = ladder("--budget-gpu-hours", str(0.3 / 3600))
        assert stopped.returncode == 3, stopped.stderr[-3000:]
        summary = json.loads(stopped.stdout.strip().splitlines()[-1])
        assert summary["budget"]["stopped"] and genrm.stats()["requests"] == 0
        # the stop names the step the reward model's rung refused, not the GenRM's rounds that asked nothing
        budget = summary["budget"]
        assert budget["next_step_gpu_hours"] > 0, budget
        assert f"(expected {budget['next_step_gpu_hours']:.6g} GPU-hours)" in stopped.stderr
        scored = rm.stats()["requests"]
        assert 0 < scored < pairs and summary["reward_model"]["judged"] == scored
        again = ladder("--budget-gpu-hours", "10")
        assert again.returncode == 0, again.stderr[-3000:]
        assert rm.stats()["requests"] == pairs  # each pair scored once over both runs
        assert rm.stats()["scored"] == 2 * pairs
