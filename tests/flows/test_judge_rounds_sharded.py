"""Judging in rounds in shards (`certify[:K]` with `--shards N`): each round decided by the coordinator from the
warehouse as the single-process rounds decide it, split into signed shards, judged by the GPU worker's flow in
this process, merged, then the next round decided. On the same clean synthetic HelpSteer3 pairs, judged by the
stand-in (SIMULATED, with a position bias, so that orders disagree), the sharded rounds ask exactly what the
single-process rounds ask and certify the same pairs; a coordinator killed with SIGKILL part-way pays nothing
twice on its rerun; a shard that fails leaves the others to finish, and its pairs are asked in the next round."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flows.judge import judge
from flows.judge_shards import ShardsIncompleteError, judge_sharded_here
from schemas.summaries import ShardedJudgeSummary
from tasks.review.rounds import NOTHING_MORE, TOO_FEW
from testing.genrm_standin import StandinConfig, StandinProcess
from tests.flows.conftest import ingest_clean_pairs, killed_part_way
from tests.summary_checks import assert_summary
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

ROWS = 1200  # as tests/flows/test_judge_rounds.py: enough clear labels for the p_correct model to decide
TARGET = 0.9
STANDIN = {"latency_mean": 0.002, "capacity": 64, "position_bias": 0.3}
CURATE = str(Path(sys.executable).with_name("curate"))
ROUND_KEYS = ("round", "pairs_asked", "requests", "judged", "certified", "how")


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> tuple[Path, int]:
    """A warehouse of ingested, unjudged pairs (copied by each test) and how many pairs go on to judging."""
    folder = tmp_path_factory.mktemp("sharded-rounds")
    warehouse = folder / "clean.duckdb"
    return warehouse, ingest_clean_pairs(folder, warehouse, ROWS, seed=41)


def _copy(clean: tuple[Path, int], to: Path) -> Path:
    to.write_bytes(clean[0].read_bytes())
    return to


def _verdicts(path: Path) -> dict[tuple[str, str, int], tuple]:
    with Warehouse(path, read_only=True) as wh:
        rows = wh.query('SELECT pair_id, "order", sample_index, status, score_1, score_2, ranking, requests '
                        "FROM judgments")
    return {(r[0], r[1], r[2]): r[3:] for r in rows}


def _certified(path: Path) -> tuple[int, list[str]]:
    """What build-version certifies at the target: how many pairs, and which (the version's rows)."""
    from flows.versions import build_version

    made = build_version("rounds", policy_overrides={"target_agreement": TARGET}, warehouse=str(path))
    with Warehouse(path, read_only=True) as wh:
        kept = [r["pair_id"] for r in wh.versions.version_rows("rounds", made["version"])]
    return made["stats"]["certification"]["accepted"], kept


def test_sharded_rounds_ask_what_one_process_asks_and_certify_the_same_pairs(clean, tmp_path):
    n = clean[1]
    one_at, sharded_at = _copy(clean, tmp_path / "one.duckdb"), _copy(clean, tmp_path / "sharded.duckdb")
    exchange = str(tmp_path / "exchange")
    with StandinProcess(StandinConfig(**STANDIN)) as server:
        one = judge(endpoints=[server.url], strategy="certify:2", target_agreement=TARGET, warehouse=str(one_at))
        server.reset_stats()
        s = judge_sharded_here(3, endpoints=[server.url], strategy="certify:2", target_agreement=TARGET,
                               exchange=exchange, warehouse=str(sharded_at))
        seen = server.stats()["requests"]
        server.reset_stats()
        again = judge_sharded_here(3, endpoints=[server.url], strategy="certify:2", target_agreement=TARGET,
                                   exchange=exchange, warehouse=str(sharded_at))
        assert server.stats()["requests"] == 0
    assert_summary(s, ShardedJudgeSummary)
    print(f"one process: {[(r['pairs_asked'], r['requests']) for r in one['rounds']]}, {one['seconds']} s judging; "
          f"in 3 shards: {[(r['pairs_asked'], r['requests'], len(r['shards'])) for r in s['rounds']]}, "
          f"{s['seconds']} s from the first shard to the last merge")
    # round by round the same decisions: the same pairs asked the same judgments, the same certified count after
    assert [{k: r[k] for k in ROUND_KEYS} for r in s["rounds"]] == [{k: r[k] for k in ROUND_KEYS}
                                                                    for r in one["rounds"]]
    assert len(s["rounds"]) >= 3 and s["rounds_ended"] == one["rounds_ended"] == NOTHING_MORE
    assert s["rounds"][0]["pairs_asked"] == n and s["requests"] == seen == one["requests"]
    # each round in its own plan, split in 3 shards (a round of few pairs may leave a bucket empty), all finished
    assert len({r["plan_id"] for r in s["rounds"]}) == len(s["rounds"])
    assert all(1 <= len(r["shards"]) <= 3 and {x["state"] for x in r["shards"]} == {"COMPLETED"} for r in s["rounds"])
    assert len(s["rounds"][0]["shards"]) == 3
    assert s["merged"]["rows"] == s["judged"] == one["judged"] and s["failed"] == {}
    # the same verdicts on record (the stand-in's depend on the request alone), and the same pairs certified
    assert _verdicts(sharded_at) == _verdicts(one_at)
    assert _certified(sharded_at) == _certified(one_at)
    # a rerun decides afresh from the warehouse and plans nothing
    assert again["requests"] == 0 and again["rounds_ended"] == NOTHING_MORE
    assert [(r["pairs_asked"], r["shards"]) for r in again["rounds"]] == [(0, [])]


def _env(exchange: Path, prefect_server: str, **more: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
            "CURATE_JUDGE_EXCHANGE": str(exchange), "PREFECT_API_URL": prefect_server, **more}


def test_sigkill_of_the_coordinator_mid_rounds_then_rerun_pays_nothing_twice(clean, tmp_path, prefect_server):
    """kill -9 `curate judge --shards 3` at a random point of its rounds (a shard judging, a merge, a decision):
    the rerun merges what the killed shards wrote, decides its rounds afresh and finishes; every verdict is the
    one an uninterrupted run got, and at most one batch (plus what was in flight) was paid for twice."""
    n = clean[1]
    reference_at, path = _copy(clean, tmp_path / "reference.duckdb"), _copy(clean, tmp_path / "killed.duckdb")
    batch, in_flight = 8, 4
    env = _env(tmp_path / "exchange", prefect_server, CURATE_JUDGE_WRITE_BATCH=str(batch),
               CURATE_JUDGE_MAX_IN_FLIGHT=str(in_flight))
    args = ["--shards", "3", "--strategy", "certify:2", "--target-agreement", str(TARGET), "--warehouse", str(path),
            "--json"]
    config = StandinConfig(capacity=in_flight, latency_mean=0.004, latency_sigma=0.2, position_bias=0.3)
    with StandinProcess(config) as server:
        reference = judge(endpoints=[server.url], strategy="certify:2", target_agreement=TARGET,
                          warehouse=str(reference_at))
        server.reset_stats()
        # in round 0, or as often in a later round (or a merge or decision between two), before the last batch
        kill_after = random.choice([random.randint(n // 3, n), random.randint(n + 1, reference["requests"] - batch
                                                                                - in_flight - 1)])
        killed_part_way([CURATE, "judge", "--endpoint", server.url, *args], env, server, kill_after)
        killed = server.stats()["requests"]
        assert 0 < killed < reference["requests"]
        rerun = subprocess.run([CURATE, "judge", "--endpoint", server.url, *args], env=env, capture_output=True,
                               text=True, timeout=600)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        summary = json.loads(rerun.stdout)
        total = server.stats()["requests"]
        third = subprocess.run([CURATE, "judge", "--endpoint", server.url, *args], env=env, capture_output=True,
                               text=True, timeout=600)
        assert third.returncode == 0 and json.loads(third.stdout)["requests"] == 0, third.stderr[-2000:]
        assert server.stats()["requests"] == total

    after, wanted = _verdicts(path), _verdicts(reference_at)
    print(f"killed after {killed} requests, rerun merged {summary['merged_before']['rows']} rows first, rounds "
          f"{[(r['pairs_asked'], r['requests']) for r in summary['rounds']]}, {total} requests in all against "
          f"{reference['requests']} uninterrupted")
    assert_summary(summary, ShardedJudgeSummary)
    # it ends as a run ends: nothing more to ask, or (the pairs of a half-written round, say) too few for a round
    assert summary["rounds_ended"] == NOTHING_MORE or TOO_FEW in summary["rounds_ended"], summary["rounds_ended"]
    # the stand-in's verdicts depend on the request alone: a judgment both runs asked got the same verdict
    assert all(after[k][:4] == wanted[k][:4] for k in after.keys() & wanted.keys())
    assert {v[0] for v in after.values()} == {"ok"}
    # each judgment paid for once, but for a batch written by no one and what was in flight when the process died
    repeated = total - len(after)
    assert 0 <= repeated <= batch + in_flight, f"{repeated} judgments were paid for twice"


DEAD = "http://127.0.0.1:9/v1"  # nothing listens: a GPU worker whose server is gone


def _failing(monkeypatch, fails) -> list[str]:
    """The worker's flow, as the coordinator runs it per shard, with the shards `fails(round, index)` names pointed
    at a dead endpoint (their runs fail before any request); returns the plans in the order they were judged."""
    import flows.judge

    real, plans = flows.judge.judge_worker, []

    def worker(work, *, endpoints, **kw):
        plan, name = work.split("/")[-2:]
        if plan not in plans:
            plans.append(plan)
        index = int(name.split("-")[1])
        return real(work, endpoints=[DEAD] if fails(plans.index(plan), index) else endpoints, **kw)

    monkeypatch.setattr(flows.judge, "judge_worker", worker)
    return plans


def _paid(path: Path) -> int:
    with Warehouse(path, read_only=True) as wh:
        return wh.query("SELECT coalesce(sum(requests), 0) FROM judgments")[0][0]


def test_a_shard_that_fails_leaves_the_others_to_finish_and_its_pairs_are_asked_next_round(clean, tmp_path,
                                                                                          monkeypatch):
    from tasks.judge.exchange import Exchange, read_work

    at, exchange = _copy(clean, tmp_path / "one-fails.duckdb"), tmp_path / "exchange"
    _failing(monkeypatch, lambda rnd, index: (rnd, index) == (1, 1))
    with StandinProcess(StandinConfig(**STANDIN)) as server:
        s = judge_sharded_here(3, endpoints=[server.url], strategy="certify:2", target_agreement=TARGET,
                               exchange=str(exchange), warehouse=str(at))
        seen = server.stats()["requests"]
    states = [[x["state"] for x in r["shards"]] for r in s["rounds"]]
    print(f"rounds {[(r['pairs_asked'], r['requests']) for r in s['rounds']]}, shards {states}")
    assert states[1] == ["COMPLETED", "FAILED", "COMPLETED"] and all(set(x) == {"COMPLETED"} for x in states[2:])
    assert s["rounds"][1]["shards"][1]["message"], s["rounds"][1]["shards"][1]  # why, from its flow run
    # the failed shard's pairs got nothing in round 1: round 2 asks them again what round 1 asked (the other order
    # of each), beside what the core decides from the warehouse
    lost = read_work(*Exchange.of_work(str(exchange / "plans" / s["rounds"][1]["plan_id"] / "shard-1-of-3.parquet")))
    failed = {p.pair_id for p in lost.pairs}
    second: dict = {}
    for f in (exchange / "plans" / s["rounds"][2]["plan_id"]).glob("shard-*.parquet"):
        second.update(read_work(*Exchange.of_work(str(f))).wanted)
    assert failed and all(len(lost.wanted[p]) == 1 and lost.wanted[p][0][1] == 0 for p in failed)  # `other 0`
    assert all(set(lost.wanted[p]) <= set(second.get(p, ())) for p in failed)
    assert s["rounds"][2]["how"].endswith(f"asked again, their shards having failed: {len(failed):,} pairs")
    with Warehouse(at, read_only=True) as wh:
        holding = {r[0] for r in wh.query("""SELECT pair_id FROM judgments WHERE sample_index = 0 AND status = 'ok'
                                             GROUP BY pair_id HAVING count(*) = 2""")}  # both orders
    assert failed <= holding
    assert s["rounds_ended"] == NOTHING_MORE  # and nothing is left for any pair when the rounds end
    # nothing paid for twice: what the stand-in answered is what the judgments on record cost
    assert seen == s["requests"] == _paid(at)


def test_a_shard_failing_in_the_last_round_is_reported_and_the_rerun_finishes(clean, tmp_path, monkeypatch):
    at, exchange = _copy(clean, tmp_path / "last-fails.duckdb"), tmp_path / "exchange"
    with StandinProcess(StandinConfig(**STANDIN)) as server:
        _failing(monkeypatch, lambda rnd, index: rnd >= 1 and index == 0)  # its server never comes back
        with pytest.raises(ShardsIncompleteError) as err:
            judge_sharded_here(3, endpoints=[server.url], strategy="certify:2", target_agreement=TARGET,
                               exchange=str(exchange), warehouse=str(at))
        first = server.stats()["requests"]
        monkeypatch.undo()
        rerun = judge_sharded_here(3, endpoints=[server.url], strategy="certify:2", target_agreement=TARGET,
                                   exchange=str(exchange), warehouse=str(at))
        total = server.stats()["requests"]
    message = str(err.value)
    print(message)
    assert re.match(r"round [2-5]: 1 of [1-3] judge shards did not finish \(0/3 failed", message), message
    assert "\n" not in message
    assert "rerun to judge the rest" in message
    # finished: nothing more to ask, or too little for a round of its own (the run's least)
    assert rerun["rounds_ended"] == NOTHING_MORE or TOO_FEW in rerun["rounds_ended"], rerun["rounds_ended"]
    assert rerun["requests"] == total - first > 0
    assert all(x["state"] == "COMPLETED" for r in rerun["rounds"] for x in r["shards"])
    assert total == _paid(at)


def test_a_sharded_ladder_scores_rung_0_here_and_asks_the_genrm_what_one_process_asks(clean, tmp_path):
    """`--strategy ladder --shards N`: the coordinator scores every pair with the reward model, the GenRM's
    rounds go to the shards; round by round the same decisions and the same certified pairs as in one process."""
    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    n = clean[1]
    one_at, sharded_at = _copy(clean, tmp_path / "one.duckdb"), _copy(clean, tmp_path / "sharded.duckdb")
    exchange = str(tmp_path / "exchange")
    ladder = {"strategy": "ladder", "target_agreement": TARGET}
    with StandinProcess(StandinConfig(**STANDIN)) as genrm, RewardStandinProcess(RewardStandinConfig()) as rm:
        one = judge(endpoints=[genrm.url], rm_endpoints=[rm.url], warehouse=str(one_at), **ladder)
        genrm.reset_stats()
        rm_before = rm.stats()["requests"]
        s = judge_sharded_here(3, endpoints=[genrm.url], rm_endpoints=[rm.url], exchange=exchange,
                               warehouse=str(sharded_at), **ladder)
        asked_genrm, scored = genrm.stats()["requests"], rm.stats()["requests"] - rm_before
        again = judge_sharded_here(3, endpoints=[genrm.url], rm_endpoints=[rm.url], exchange=exchange,
                                   warehouse=str(sharded_at), **ladder)
        # nothing asked twice
        assert genrm.stats()["requests"] == asked_genrm and rm.stats()["requests"] - rm_before == scored
    assert_summary(s, ShardedJudgeSummary)
    assert scored == n and s["reward_model"]["judged"] == n
    rounds = s["rounds"]
    assert rounds[0]["judge"] == "reward_model" and rounds[0]["pairs_asked"] == n and rounds[0]["shards"] == []
    assert all(r["judge"] == "genrm" for r in rounds[1:]) and len(rounds) >= 2
    keys = (*ROUND_KEYS, "judge")
    assert [{k: r[k] for k in keys} for r in rounds] == [{k: r[k] for k in keys} for r in one["rounds"]]
    assert 0 < asked_genrm == one["cost"]["by_judge"]["genrm"]["requests"] < n
    # GPU-seconds per judge: the reward model's measured here, the GenRM's by the shards' runs
    by_judge = s["cost"]["by_judge"]
    assert by_judge["reward_model"]["requests"] == n and by_judge["genrm"]["requests"] == asked_genrm
    assert all(j["gpu_seconds"] > 0 for j in by_judge.values())
    assert _verdicts(sharded_at) == _verdicts(one_at)
    assert _certified(sharded_at) == _certified(one_at)
    assert again["requests"] == 0


def test_a_sharded_ladder_stopped_after_rung_0_goes_on_as_one_process_judges(clean, tmp_path):
    """`--strategy ladder --shards N --reward-model-only`: the coordinator scores rung 0 and dispatches no shard;
    the run without the flag then pays the reward model nothing twice, and its GenRM rounds decide, ask and
    certify what one process's ladder does."""
    from tasks.judge.ladder import REWARD_MODEL_ONLY
    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    n = clean[1]
    one_at, sharded_at = _copy(clean, tmp_path / "one.duckdb"), _copy(clean, tmp_path / "sharded.duckdb")
    exchange = tmp_path / "exchange"
    ladder = {"strategy": "ladder", "target_agreement": TARGET}
    with StandinProcess(StandinConfig(**STANDIN)) as genrm, RewardStandinProcess(RewardStandinConfig()) as rm:
        one = judge(endpoints=[genrm.url], rm_endpoints=[rm.url], warehouse=str(one_at), **ladder)
        genrm.reset_stats()
        rm_before = rm.stats()["requests"]
        sharded = {"endpoints": [genrm.url], "rm_endpoints": [rm.url], "exchange": str(exchange),
                   "warehouse": str(sharded_at), **ladder}
        alone = judge_sharded_here(3, reward_model_only=True, **sharded)
        assert genrm.stats()["requests"] == 0 and rm.stats()["requests"] - rm_before == n
        assert not list(exchange.glob("plans/*/*.parquet"))  # no shard's work was written
        s = judge_sharded_here(3, **sharded)
        assert rm.stats()["requests"] - rm_before == n  # nothing paid twice
        asked_genrm = genrm.stats()["requests"]
    assert_summary(alone, ShardedJudgeSummary)
    assert alone["rounds_ended"] == REWARD_MODEL_ONLY and alone["reward_model"]["judged"] == n
    assert alone["requests"] == n == alone["cost"]["by_judge"]["reward_model"]["requests"]
    assert "genrm" not in alone["cost"]["by_judge"] or alone["cost"]["by_judge"]["genrm"]["requests"] == 0
    assert s["reward_model"]["requests"] == 0 and s["rounds_ended"] != REWARD_MODEL_ONLY
    keys = tuple(k for k in ROUND_KEYS if k not in ("requests", "judged", "pairs_asked"))  # rung 0 asked nothing now
    assert [{k: r[k] for k in keys} for r in s["rounds"]] == [{k: r[k] for k in keys} for r in one["rounds"]]
    assert 0 < asked_genrm == one["cost"]["by_judge"]["genrm"]["requests"]
    assert _verdicts(sharded_at) == _verdicts(one_at)
    assert _certified(sharded_at) == _certified(one_at)


def test_a_sharded_run_stops_at_its_budget_between_rounds_and_a_rerun_pays_for_nothing_twice(clean, tmp_path,
                                                                                              monkeypatch):
    """`--budget-gpu-hours H --shards N`: the coordinator checks, before each round goes to the shards, what the
    shards' runs measured so far plus the round's requests at the run's rate. Round 0 (1,200 requests at 50 ms on
    8 GPUs: several GPU-seconds) fits a declared rate that prices it near nothing; nothing after it fits 1
    GPU-second. A rerun with a larger budget finishes, asking no stored judgment again."""
    from common.settings import get_settings

    monkeypatch.setenv("CURATE_COST_SERVER_TOKENS_PER_SECOND", "1e12")
    get_settings.cache_clear()
    path = _copy(clean, tmp_path / "budget.duckdb")
    rounds = {"strategy": "certify:2", "target_agreement": TARGET, "exchange": str(tmp_path / "exchange"),
              "warehouse": str(path)}
    with StandinProcess(StandinConfig(**{**STANDIN, "latency_mean": 0.05})) as server:
        stopped = judge_sharded_here(2, endpoints=[server.url], budget_gpu_hours=1.0 / 3600, **rounds)
        first = server.stats()["requests"]
        done = judge_sharded_here(2, endpoints=[server.url], budget_gpu_hours=10.0, **rounds)
        total = server.stats()["requests"]
    assert_summary(stopped, ShardedJudgeSummary)
    assert stopped["budget"]["stopped"] and stopped["rounds_ended"] == "stopped at the GPU-hour budget"
    assert len(stopped["rounds"]) == 1 and first == clean[1] == stopped["requests"]  # round 0 alone
    assert stopped["budget"]["spent_gpu_hours"] > 0 and stopped["budget"]["left_gpu_hours"] >= 0
    assert not done["budget"]["stopped"] and done["rounds_ended"] == NOTHING_MORE
    assert done["rounds"][0]["requests"] == 0  # round 0's judgments were stored: not asked again
    with Warehouse(path, read_only=True) as wh:
        stored = wh.query("SELECT count(*) FROM judgments WHERE status = 'ok'")[0][0]
    assert total == stored  # each judgment paid for once
