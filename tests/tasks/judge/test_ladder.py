"""The judge ladder end to end through the CLI, against two stand-ins (SIMULATED): the reward model scores every
pair, the GenRM is asked only about the pairs its scores leave unsure, and `curate build-version` certifies a
version on every verdict the pairs have."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from schemas.summaries import JudgeSummary
from testing.genrm_standin import StandinConfig, StandinProcess
from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess
from tests.flows.conftest import ingest_clean_pairs
from tests.summary_checks import assert_summary
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

ROWS = 1200  # enough clear labels for the score's model to certify on
CURATE = str(Path(sys.executable).with_name("curate"))


def test_a_ladder_judged_warehouse_makes_a_certified_version(tmp_path, prefect_server):
    warehouse = tmp_path / "w.duckdb"
    pairs = ingest_clean_pairs(tmp_path, warehouse, ROWS, seed=41)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(warehouse), "PREFECT_API_URL": prefect_server}

    def curate(*args: str) -> dict:
        done = subprocess.run([CURATE, *args, "--json"], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    with (StandinProcess(StandinConfig(latency_mean=0.002, position_bias=0.3)) as genrm,
          RewardStandinProcess(RewardStandinConfig(latency_mean=0.0)) as rm):
        s = curate("judge", "--strategy", "ladder", "--rm-endpoint", rm.url, "--endpoint", genrm.url,
                   "--target-agreement", "0.9")
        genrm_requests, rm_stats = genrm.stats()["requests"], rm.stats()
        again = curate("judge", "--strategy", "ladder", "--rm-endpoint", rm.url, "--endpoint", genrm.url,
                       "--target-agreement", "0.9")
        assert genrm.stats()["requests"] == genrm_requests and rm.stats()["scored"] == rm_stats["scored"]
    assert_summary(s, JudgeSummary)
    rounds = s["rounds"]
    assert rounds[0]["judge"] == "reward_model" and rounds[0]["pairs_asked"] == pairs == rounds[0]["judged"]
    assert all(r["judge"] == "genrm" for r in rounds[1:]) and len(rounds) >= 2
    assert rm_stats["scored"] == 2 * pairs and rm_stats["duplicated_bos"] == 0  # each answer once
    # the GenRM only where the reward model left a pair unsure: far fewer requests than swap's two a pair
    assert 0 < genrm_requests == sum(r["requests"] for r in rounds[1:]) < pairs
    assert s["requests"] == pairs + genrm_requests and s["reward_model"]["judged"] == pairs and s["simulated"]
    # GPU-seconds measured per judge: each endpoint's busy time times the GPUs its server holds
    by_judge = s["cost"]["by_judge"]
    assert by_judge["reward_model"]["requests"] == pairs and by_judge["genrm"]["requests"] == genrm_requests
    assert by_judge["genrm"]["gpus_per_server"] == 8 and by_judge["reward_model"]["gpus_per_server"] == 1
    assert s["cost"]["gpu_seconds"] == pytest.approx(sum(j["gpu_seconds"] for j in by_judge.values()), abs=0.01)
    assert all(j["gpu_seconds"] > 0 for j in by_judge.values())
    assert again["rounds"][0]["requests"] == 0 and again["requests"] == 0  # a rerun pays for nothing twice
    with Warehouse(warehouse, read_only=True) as wh:
        kinds = dict(wh.query("SELECT kind, count(*) FROM judgments JOIN judge_configs USING (judge_config_id) "
                              "GROUP BY kind"))
        rm_rows = wh.query("SELECT score_1, ranking, margin_a, raw_text FROM judgments WHERE \"order\" = 'none' "
                           "LIMIT 1")
        sure_on_rm_alone = wh.query("SELECT count(*) FROM judgments r WHERE r.\"order\" = 'none' AND NOT EXISTS "
                                    "(SELECT 1 FROM judgments g WHERE g.pair_id = r.pair_id AND g.\"order\" <> 'none')")
    assert kinds == {"reward_model": pairs, "genrm": genrm_requests}
    # curate status: the pairs the rounds left at the reward model are not pending for the GenRM
    status = {j["judge_config_id"]: j for j in curate("status")["judging"]}
    mine = status[s["judge_config_id"]]
    assert mine["pairs_pending"] == 0 and mine["pairs_at_reward_model"] == sure_on_rm_alone[0][0]
    assert mine["pairs_judged"] + mine["pairs_at_reward_model"] == pairs
    assert status[s["reward_model"]["judge_config_id"]]["pairs_at_reward_model"] == 0
    assert rm_rows[0][0] is None and rm_rows[0][1] is None and "score_a" in json.loads(rm_rows[0][3])
    assert sure_on_rm_alone[0][0] > 0

    made = curate("build-version", "ladder", "--target-agreement", "0.9")
    certification = made["stats"]["certification"]
    assert certification["certified"] and made["rows"] > 0 and made["judge_config_id"] == s["judge_config_id"]
    cost = made["stats"]["cost"]  # what both judges measured, per kept pair
    assert set(cost["gpu_seconds_by_judge"]) == {"genrm", "reward_model"}
    assert cost["gpu_seconds_per_kept_pair"] == pytest.approx(cost["gpu_seconds"] / made["rows"], rel=1e-3)
    with Warehouse(warehouse, read_only=True) as wh:
        kept = {p for (p,) in wh.query(f"SELECT pair_id FROM dataset_rows WHERE name = 'ladder' AND version = "
                                      f"{made['version']}")}
        genrm_judged = {p for (p,) in wh.query("SELECT DISTINCT pair_id FROM judgments WHERE \"order\" <> 'none'")}
    # rows certified on the reward model's margin alone, and rows the GenRM judged too
    assert set(Counter(p in genrm_judged for p in kept)) == {True, False}


def test_swapped_endpoints_are_refused_before_any_request(tmp_path, prefect_server):
    """The GenRM's stand-in given as the reward model and the reward model's as the GenRM: `curate judge` exits 2
    with one line naming the endpoint that does not serve its judge's API, and neither server is asked anything."""
    warehouse = tmp_path / "w.duckdb"
    ingest_clean_pairs(tmp_path, warehouse, 40, seed=43)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(warehouse), "PREFECT_API_URL": prefect_server}
    with StandinProcess(StandinConfig()) as genrm, RewardStandinProcess(RewardStandinConfig()) as rm:
        for rm_url, genrm_url, wrong in ((genrm.url, genrm.url, genrm.url), (rm.url, rm.url, rm.url)):
            done = subprocess.run([CURATE, "judge", "--strategy", "ladder", "--rm-endpoint", rm_url, "--endpoint",
                                   genrm_url, "--target-agreement", "0.9"], env=env, capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 2, done.stderr[-2000:]
            assert f"{wrong} does not serve" in done.stderr and "HTTP 404" in done.stderr
        assert genrm.stats()["requests"] == 0 and rm.stats()["requests"] == 0 == rm.stats()["scored"]


def test_a_ladder_killed_in_either_rung_resumes_and_pays_for_nothing_twice(tmp_path, prefect_server):
    """SIGKILL `curate judge --strategy ladder` while the reward model scores, then its rerun while the GenRM's
    rounds run; the third run finishes. Each judgment is paid for once, but what was in flight or not yet written
    (a write batch) when a process died."""
    from tests.flows.conftest import killed_part_way

    warehouse = tmp_path / "w.duckdb"
    pairs = ingest_clean_pairs(tmp_path, warehouse, 600, seed=47)
    batch = 16
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(warehouse), "PREFECT_API_URL": prefect_server,
           "CURATE_JUDGE_WRITE_BATCH": str(batch)}
    capacity = 16
    with (StandinProcess(StandinConfig(latency_mean=0.02, capacity=capacity, position_bias=0.3)) as genrm,
          RewardStandinProcess(RewardStandinConfig(latency_mean=0.02, capacity=capacity)) as rm):
        argv = [CURATE, "judge", "--strategy", "ladder", "--rm-endpoint", rm.url, "--endpoint", genrm.url,
                "--target-agreement", "0.9", "--max-in-flight", str(capacity), "--json"]
        killed_part_way(argv, env, rm, pairs // 3)
        assert pairs // 3 <= rm.stats()["requests"] < pairs and genrm.stats()["requests"] == 0
        killed_part_way(argv, env, genrm, 40)
        assert rm.stats()["requests"] <= pairs + 2 * (batch + capacity)
        assert genrm.stats()["requests"] >= 40
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        s = json.loads(done.stdout.strip().splitlines()[-1])
        asked = {"rm": rm.stats()["requests"], "genrm": genrm.stats()["requests"]}
    with Warehouse(warehouse, read_only=True) as wh:
        kinds = dict(wh.query("SELECT kind, count(*) FROM judgments JOIN judge_configs USING (judge_config_id) "
                              "WHERE status = 'ok' GROUP BY kind"))
    assert kinds["reward_model"] == pairs and s["rounds_ended"]
    # paid once each, but for the two kills' in-flight and unwritten requests
    assert asked["rm"] <= pairs + 2 * (batch + capacity)
    assert asked["genrm"] <= kinds["genrm"] + 2 * (batch + capacity)


def test_a_ladder_scored_by_the_reward_model_alone_is_estimated_as_its_run_then_asks(tmp_path, prefect_server):
    """`--reward-model-only` scores the reward model's rung and stops, the GenRM asked nothing. An `--estimate`
    then expects of the GenRM's first rung exactly the pairs the run's first GenRM round asks (the rounds' rule's
    own decision, not a replay), and the run pays the reward model nothing twice."""
    warehouse = tmp_path / "w.duckdb"
    pairs = ingest_clean_pairs(tmp_path, warehouse, ROWS, seed=53)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(warehouse), "PREFECT_API_URL": prefect_server}
    with (StandinProcess(StandinConfig(latency_mean=0.005, capacity=64)) as genrm,
          RewardStandinProcess(RewardStandinConfig(latency_mean=0.002, capacity=64)) as rm):
        argv = [CURATE, "judge", "--strategy", "ladder", "--rm-endpoint", rm.url, "--endpoint", genrm.url,
                "--target-agreement", "0.9", "--json"]

        def curate(*extra: str) -> dict:
            done = subprocess.run([*argv, *extra], env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stderr[-3000:]
            return json.loads(done.stdout.strip().splitlines()[-1])

        curate("--limit", str(pairs // 2))  # an earlier run: the estimate's measured rates and training labels
        asked = {"genrm": genrm.stats()["requests"], "rm": rm.stats()["requests"]}
        alone = curate("--reward-model-only")
        assert "--reward-model-only" in alone["rounds_ended"]
        assert genrm.stats()["requests"] == asked["genrm"]  # the GenRM was asked nothing
        assert rm.stats()["requests"] - asked["rm"] == pairs - pairs // 2  # the reward model scored the rest
        scored = rm.stats()["requests"]
        found = curate("--estimate")["estimate"]
        assert found["rungs"][0]["judge"] == "reward_model" and found["rungs"][0]["requests"]["high"] == 0
        expected = found["rungs"][1]["requests"]["expected"]
        s = curate()
        assert rm.stats()["requests"] == scored  # nothing paid twice
    first = [r for r in s["rounds"] if r["judge"] == "genrm"][0]
    assert expected > 0 and first["requests"] == expected, (expected, s["rounds"])


def test_a_ladders_summary_counts_both_rungs_time_and_rate():
    from tasks.judge.ladder import ladder_summary

    rm = {"requests": 100, "judged": 100, "failed": {}, "tokens_in": 5000, "tokens_out": 0, "seconds": 2.0}
    genrm = {"requests": 40, "judged": 38, "failed": {"timeout": 2}, "tokens_in": 9000, "tokens_out": 700,
             "seconds": 3.0, "judgments_per_second": 13.333, "rounds": []}
    s = ladder_summary(rm, 100, genrm)
    assert (s["requests"], s["judged"], s["seconds"]) == (140, 138, 5.0)
    assert s["judgments_per_second"] == 28.0  # 138 judged and 2 failed in 5 s
    assert ladder_summary(rm, 100, {**genrm, "seconds": 0.0})["seconds"] == 2.0
