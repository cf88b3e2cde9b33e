"""Judging in rounds (`certify[:K]`) through the real `judge` flow and `curate judge` on Prefect's ephemeral API:
the stand-in (SIMULATED, with a position bias, so that orders disagree) judges clean synthetic HelpSteer3 pairs in
a real DuckDB warehouse. Each round asks exactly what the certification core decides from the verdicts before it
(checked again here from the warehouse with the core's functions alone), fewer requests than `swap` in all, a
rerun nothing, a run killed with SIGKILL part-way pays nothing twice; and the tiny GenRM behind the real vLLM CPU
build, for the rounds' plumbing end to end."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from flows.judge import judge
from schemas.summaries import JudgeSummary
from tasks.curate.certification import first_is_ba
from tasks.curate.confidence import pool_confidences
from tasks.curate.policy import make_policy
from tasks.ingest.sources import known_facts
from tasks.judge.strategies import oriented, parse_strategy
from tasks.review.certification import certification_labels
from tasks.review.pool import ReviewedPool
from tasks.review.rounds import NOTHING_MORE, TOO_FEW, round_plan
from testing.genrm_standin import StandinConfig, StandinProcess
from tests.flows.conftest import ingest_clean_pairs, killed_part_way
from tests.summary_checks import assert_summary
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

ROWS = 1200  # enough clear labels for the p_correct model to decide who is sure (fewer: the judge's own rule)
TARGET = 0.9
STANDIN = {"latency_mean": 0.002, "capacity": 64, "position_bias": 0.3}
CURATE = str(Path(sys.executable).with_name("curate"))


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> tuple[Path, int]:
    """A warehouse of ingested, unjudged pairs (copied by each test) and how many pairs go on to judging."""
    folder = tmp_path_factory.mktemp("rounds")
    warehouse = folder / "clean.duckdb"
    return warehouse, ingest_clean_pairs(folder, warehouse, ROWS, seed=41)


def _copy(clean: tuple[Path, int], to: Path) -> Path:
    to.write_bytes(clean[0].read_bytes())
    return to


def _verdicts(path: Path) -> dict[tuple[str, str, int], tuple]:
    with Warehouse(path, read_only=True) as wh:
        rows = wh.query('SELECT pair_id, "order", sample_index, status, score_1, score_2, ranking FROM judgments')
    return {(r[0], r[1], r[2]): r[3:] for r in rows}


def _first_orders(path: Path) -> dict[str, str]:
    """Each judged pair's first order by its texts: `ba` (its shorter answer, B, shown first) where A is longer."""
    with Warehouse(path, read_only=True) as wh:
        rows = wh.query("SELECT p.pair_id, length(p.response_a) > length(p.response_b) FROM candidate_pairs p "
                        "WHERE p.pair_id IN (SELECT pair_id FROM judgments)")
    return {p: "ba" if longer_a else "ab" for p, longer_a in rows}


def _holding(verdicts: dict, order: str, sample: int) -> set[str]:
    return {p for (p, o, s), v in verdicts.items() if (o, s) == (order, sample) and v[0] == "ok"}


def _by_round(path: Path, rounds: list[dict]) -> list[set[tuple[str, str, int]]]:
    """The judgments each round got, from the warehouse alone: a round's verdicts all came back before the next
    round was decided, so in the order they finished, the first `judged` of round 0 are its own, and so on."""
    with Warehouse(path, read_only=True) as wh:
        done = wh.query('SELECT pair_id, "order", sample_index FROM judgments WHERE status = \'ok\' '
                        "ORDER BY finished_at")
    cuts = np.cumsum([0] + [r["judged"] for r in rounds])
    return [set(done[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _decided(path: Path, known: set[tuple[str, str, int]]) -> set[tuple[str, str, int]]:
    """The judgments the next round asks, decided again by the certification core from the warehouse's verdicts
    in `known` alone (what the warehouse held when that round was decided), with the labels and rule the run uses:
    each pair's next rung, less what it already holds."""
    with Warehouse(path, read_only=True) as wh:
        read = ReviewedPool.read(wh, wh.versions.latest_judge_config_id())
        pool, reviews = read.pool, read.reviews
    keep = np.array([(pool.pair_id[i], "ab" if ab else "ba", int(s)) in known
                     for i, ab, s in zip(pool.v_pair, pool.v_ab, pool.v_sample)], bool)
    pool = replace(pool, **{k: getattr(pool, k)[keep] for k in ("v_pair", "v_ab", "v_sample", "v_margin",
                                                                 "v_scores_agree")})
    c = pool_confidences(len(pool), pool.v_pair, pool.v_ab, pool.v_margin, pool.v_scores_agree, pool.human_label)
    policy = make_policy({"target_agreement": TARGET})  # the policy's defaults
    labels = certification_labels(pool, c, reviews, policy, known_facts())
    ladder = parse_strategy("certify:2").ladder()
    rungs = round_plan(pool, c, labels, policy, ladder, np.ones(len(pool), bool)).rungs
    firsts = np.where(first_is_ba(pool), "ba", "ab")  # each pair's rung in its first order
    return {(p, o, s) for i, (p, r) in enumerate(zip(pool.pair_id.tolist(), rungs.tolist())) if r >= 0
            for o, s in oriented(ladder[r], firsts[i])} - known


def test_certify_asks_each_round_only_what_the_last_left_unsure_and_fewer_than_swap(clean, tmp_path):
    n = clean[1]
    rounds_at, swap_at = _copy(clean, tmp_path / "rounds.duckdb"), _copy(clean, tmp_path / "swap.duckdb")
    with StandinProcess(StandinConfig(**STANDIN)) as server:
        s = judge(endpoints=[server.url], strategy="certify:2", target_agreement=TARGET, warehouse=str(rounds_at))
        certify_seen = server.stats()["requests"]
        server.reset_stats()
        swap = judge(endpoints=[server.url], strategy="swap", warehouse=str(swap_at))
        swap_seen = server.stats()["requests"]
    assert_summary(s, JudgeSummary)
    rounds = s["rounds"]
    print(f"certify:2 at {TARGET}: {s['requests']} requests over {n} pairs in rounds "
          f"{[(r['pairs_asked'], r['requests'], r['certified']) for r in rounds]}; swap {swap['requests']}")
    # round 0 asks every pair once; each later one a subset, each pair its next rung; at most 2(K+1) rounds
    assert [r["round"] for r in rounds] == list(range(len(rounds))) and 3 <= len(rounds) <= 6
    assert (rounds[0]["pairs_asked"], rounds[0]["requests"], rounds[0]["judged"]) == (n, n, n)
    assert rounds[0]["how"] == "first 0 of every pair without it"
    assert all(0 < r["pairs_asked"] < n for r in rounds[1:])
    assert rounds[1]["how"].endswith(f"other 0 of {rounds[1]['pairs_asked']:,}")
    assert "sure: p_correct >=" in rounds[1]["how"]
    assert "first 1, other 1 of" in rounds[2]["how"]  # further samples, for pairs whose verdicts contradict each other
    assert s["rounds_ended"] == NOTHING_MORE
    # fewer requests than swap on the same pairs, each counted once: what the stand-in saw, the rounds' sum
    assert s["requests"] == sum(r["requests"] for r in rounds) == certify_seen < swap["requests"] == swap_seen == 2 * n
    assert s["judged"] == sum(r["judged"] for r in rounds) and s["failed"] == {}

    # what each round sent is exactly what the core decides from the verdicts of the rounds before it
    verdicts = _verdicts(rounds_at)
    # round 0: each pair in its first order, its shorter answer shown first (`ba` where answer A is the longer)
    firsts = _first_orders(rounds_at)
    assert len(verdicts) == s["judged"] and len(firsts) == n and set(firsts.values()) == {"ab", "ba"}
    got = _by_round(rounds_at, rounds)
    assert got[0] == {(p, first, 0) for p, first in firsts.items()}
    for r in range(1, len(rounds)):
        known = set().union(*got[:r])
        assert got[r] == _decided(rounds_at, known), f"round {r}"
        assert len({p for p, _, _ in got[r]}) == rounds[r]["pairs_asked"]
    # ...and after the last round no pair of the run has a rung to climb
    assert _decided(rounds_at, set(verdicts)) == set()
    # a pair climbs rung by rung
    assert _holding(verdicts, "ab", 1) <= _holding(verdicts, "ab", 0) & _holding(verdicts, "ba", 0)

    # the certified count after each round is what build-version certifies at that point: more verdicts, more
    # pairs certified (it could fall when a refitted model is stricter: not on these pairs)
    certified = [r["certified"] for r in rounds]
    assert certified == sorted(certified) and certified[0] < certified[-1]
    from flows.versions import build_version

    made = build_version("rounds", policy_overrides={"target_agreement": TARGET}, warehouse=str(rounds_at))
    assert made["stats"]["certification"]["accepted"] == certified[-1]

    # a rerun decides afresh from the warehouse and sends nothing: through the flow, and through the CLI, which
    # answers without Prefect (none could start: a start-up time-out no server meets), recorded as a run all the same
    with StandinProcess(StandinConfig(**STANDIN)) as server:
        again = judge(endpoints=[server.url], strategy="certify:2", target_agreement=TARGET, warehouse=str(rounds_at))
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
               "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0"}
        env.pop("PREFECT_API_URL", None)
        done = subprocess.run([CURATE, "judge", "--endpoint", server.url, "--strategy", "certify:2",
                               "--target-agreement", str(TARGET), "--warehouse", str(rounds_at), "--json"],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        table = subprocess.run([CURATE, "judge", "--endpoint", server.url, "--strategy", "certify:2",
                                "--target-agreement", str(TARGET), "--warehouse", str(rounds_at)],
                               env=env, capture_output=True, text=True, timeout=300)
        assert server.stats()["requests"] == 0
    # the table: one line per round
    assert re.search(rf"\nround 0 +0 pairs asked, 0 requests, 0 judged; {certified[-1]:,} pairs certified after it "
                     r"\(first 0 of every pair without it\)\n", table.stdout), table.stdout
    cli = json.loads(done.stdout)
    for rerun in (again, cli):
        assert_summary(rerun, JudgeSummary)
        assert rerun["requests"] == 0 and rerun["skipped_cached"] == n and rerun["rounds_ended"] == NOTHING_MORE
        assert rerun["rounds"] == [{"round": 0, "requests": 0, "judged": 0, "pairs_asked": 0,
                                    "certified": certified[-1], "how": "first 0 of every pair without it"}]
    with Warehouse(rounds_at, read_only=True) as wh:
        (runs,) = wh.query("SELECT count(*) FROM judge_runs WHERE status = 'completed'")[0]
    assert runs == 4


def test_a_round_of_fewer_judgments_than_a_runs_least_is_not_sent_and_a_rerun_agrees(clean, tmp_path, monkeypatch):
    """CURATE_JUDGE_MIN_ROUND (32 by default): a climbing round that would ask fewer judgments is not sent (it would
    wait for its slowest request with the server's batch emptying); the rounds end saying so. On a judge ladder,
    where a refit after a small round often sends a few pairs more: every decision is made from the warehouse, so
    a rerun decides the same and sends nothing; with every round allowed (1), a rerun asks what was left and ends
    where a run that sent every round ended, verdict for verdict."""
    from common.settings import get_settings
    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    every_at, least_at = _copy(clean, tmp_path / "every.duckdb"), _copy(clean, tmp_path / "least.duckdb")

    def run(at: Path, least: int | None = None) -> dict:
        if least is None:
            monkeypatch.delenv("CURATE_JUDGE_MIN_ROUND", raising=False)
        else:
            monkeypatch.setenv("CURATE_JUDGE_MIN_ROUND", str(least))
        get_settings.cache_clear()
        return judge(endpoints=[genrm.url], rm_endpoints=[rm.url], strategy="ladder", target_agreement=TARGET,
                     warehouse=str(at))

    try:
        with (StandinProcess(StandinConfig(**STANDIN)) as genrm,
              RewardStandinProcess(RewardStandinConfig(latency_mean=0.0)) as rm):
            every = run(every_at, least=1)
            genrm.reset_stats()
            held = run(least_at)
            sent = genrm.stats()["requests"]
            again = run(least_at)
            after_again = genrm.stats()["requests"]
            rest = run(least_at, least=1)
    finally:
        get_settings.cache_clear()
    later = [r["requests"] for r in every["rounds"][1:]]  # the GenRM's rounds, after the reward model's
    cut = next(k for k, asked in enumerate(later) if asked < 32)
    print(f"every round: {later}; held back from round {cut + 1}")
    assert every["rounds_ended"] == NOTHING_MORE and rest["rounds_ended"] == NOTHING_MORE and cut > 0
    # the same rounds as the run that sent every one, up to the one held back
    assert [r["requests"] for r in held["rounds"][1:]] == later[:cut] and sent == sum(later[:cut])
    assert f"judgments, {TOO_FEW} (32, CURATE_JUDGE_MIN_ROUND)" in held["rounds_ended"]
    assert f"would be asked {later[cut]:,} judgment" in held["rounds_ended"]
    assert again["requests"] == 0 and after_again == sent and again["rounds_ended"] == held["rounds_ended"]
    assert rest["requests"] == every["requests"] - held["requests"] > 0
    assert _verdicts(least_at) == _verdicts(every_at)


def test_a_limited_run_asks_rounds_of_its_own_pairs_only(clean, tmp_path):
    at = _copy(clean, tmp_path / "limited.duckdb")
    with Warehouse(at, read_only=True) as wh:
        first = set(wh.judging.curation_pair_ids()[:400])
    with StandinProcess(StandinConfig(**STANDIN)) as server:
        s = judge(endpoints=[server.url], strategy="certify:1", target_agreement=TARGET, limit=400, warehouse=str(at))
    assert s["pairs"] == 400 and s["rounds"][0]["pairs_asked"] == 400 and len(s["rounds"]) <= 2  # certify:1: 2
    assert {p for p, _, _ in _verdicts(at)} <= first and s["requests"] < 800


def test_answers_without_a_verdict_are_asked_again_only_up_to_the_attempt_limit(clean, tmp_path, monkeypatch):
    """A judge that answers 30% of requests without a verdict: a rung whose judgment failed is asked again in a
    later round or the next run, never past CURATE_JUDGE_MAX_ATTEMPTS answers; every request is on record."""
    from common.settings import get_settings

    at = _copy(clean, tmp_path / "faulty.duckdb")
    monkeypatch.setenv("CURATE_JUDGE_MAX_ATTEMPTS", "2")
    get_settings.cache_clear()
    try:
        with StandinProcess(StandinConfig(**STANDIN, malformed_rate=0.3, seed=5)) as server:
            runs = [judge(endpoints=[server.url], strategy="certify:2", target_agreement=TARGET, limit=300,
                          warehouse=str(at)) for _ in range(3)]
            seen = server.stats()["requests"]
    finally:
        monkeypatch.delenv("CURATE_JUDGE_MAX_ATTEMPTS")
        get_settings.cache_clear()
    first, second, third = runs
    assert sum(first["failed"].values()) > 0 and all(r["rounds_ended"] for r in runs)
    assert second["requests"] > 0 and third["requests"] == 0  # the second asks the failed again, the third nothing
    with Warehouse(at, read_only=True) as wh:
        rows = wh.query("SELECT status, attempts, requests FROM judgments")
    assert max(a for _, a, _ in rows) == 2 and {st for st, _, _ in rows} == {"ok", "failed"}
    assert seen == sum(r for _, _, r in rows) == sum(r["requests"] for r in runs)


def test_sigkill_mid_rounds_then_rerun_pays_nothing_twice(clean, tmp_path, prefect_server):
    """kill -9 the judging process at a random point of its rounds: the rerun decides its rounds afresh from what
    the warehouse holds and finishes; every verdict the stand-in gave is the one an uninterrupted run got for the
    same judgment, and it answered at most one batch (plus what was in flight) twice."""
    n = clean[1]
    reference_at, path = _copy(clean, tmp_path / "reference.duckdb"), _copy(clean, tmp_path / "killed.duckdb")
    batch, in_flight = 8, 4
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_JUDGE_WRITE_BATCH": str(batch), "CURATE_JUDGE_MAX_IN_FLIGHT": str(in_flight),
           "PREFECT_API_URL": prefect_server}
    args = ["--strategy", "certify:2", "--target-agreement", str(TARGET), "--json"]
    config = StandinConfig(capacity=in_flight, latency_mean=0.004, latency_sigma=0.2, position_bias=0.3)

    with StandinProcess(config) as server:
        reference = judge(endpoints=[server.url], strategy="certify:2", target_agreement=TARGET,
                          warehouse=str(reference_at))
        server.reset_stats()
        # in round 0, or as often in a later round (or the decision between two rounds), before the last batch
        kill_after = random.choice([random.randint(n // 2, n), random.randint(n + 1, reference["requests"] - batch
                                                                                - in_flight - 1)])
        killed_part_way([CURATE, "judge", "--endpoint", server.url, "--warehouse", str(path), *args], env, server,
                        kill_after)
        killed = server.stats()["requests"]
        before = _verdicts(path)
        assert 0 < killed < reference["requests"] and len(before) < reference["judged"]

        rerun = subprocess.run([CURATE, "judge", "--endpoint", server.url, "--warehouse", str(path), *args], env=env,
                               capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        summary = json.loads(rerun.stdout)
        total = server.stats()["requests"]
        third = subprocess.run([CURATE, "judge", "--endpoint", server.url, "--warehouse", str(path), *args], env=env,
                               capture_output=True, text=True, timeout=300)
        assert third.returncode == 0 and json.loads(third.stdout)["requests"] == 0
        assert server.stats()["requests"] == total

    after, wanted = _verdicts(path), _verdicts(reference_at)
    print(f"killed after {killed} requests ({len(before)} verdicts written), rerun rounds "
          f"{[(r['pairs_asked'], r['requests']) for r in summary['rounds']]}, {total} requests in all against "
          f"{reference['requests']} uninterrupted")
    # it ends as a run ends: nothing more to ask, or (the pairs of a half-written round, say) too few for a round
    assert summary["rounds_ended"] == NOTHING_MORE or TOO_FEW in summary["rounds_ended"], summary["rounds_ended"]
    assert summary["skipped_cached"] >= len(_holding(before, "ab", 0))
    # the stand-in's verdicts depend on the request alone: a judgment both runs asked got the same verdict
    assert all(after[k] == wanted[k] for k in after.keys() & wanted.keys())
    assert Counter(v[0] for v in after.values()) == {"ok": len(after)}
    # what was decided from a half-written round may differ from the uninterrupted decisions: each judgment is
    # still paid for once, but for a batch written by no one and what was in flight when the process died
    repeated = total - len(after)
    assert 0 <= repeated <= batch + in_flight, f"{repeated} judgments were paid for twice"


@pytest.mark.vllm
def test_rounds_end_to_end_against_the_real_vllm_serving_the_tiny_genrm(tiny_genrm_server, tmp_path, prefect_server):
    from testing.tiny_genrm import write_helpsteer3_rows

    rows, warehouse = tmp_path / "hs.jsonl", tmp_path / "w.duckdb"
    write_helpsteer3_rows(rows, 8, seed=31)
    # the tiny GenRM samples at temperature 0.6 and now and then runs past max_tokens: one answer per judgment,
    # so that a failed one is not asked again and a rerun has nothing to send
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_JUDGE_MAX_MODEL_LEN": "4096", "CURATE_JUDGE_MAX_TOKENS": "200", "CURATE_JUDGE_MAX_ATTEMPTS": "1",
           "PREFECT_API_URL": prefect_server, "CURATE_WAREHOUSE": str(warehouse)}

    def curate(*args: str) -> dict:
        done = subprocess.run([CURATE, *args, "--json"], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    curate("ingest", "--source", "helpsteer3", "--path", str(rows))
    s = curate("judge", "--endpoint", tiny_genrm_server.url, "--strategy", "certify:1", "--target-agreement", "0.9")
    assert_summary(s, JudgeSummary)
    assert s["strategy"] == "certify:1" and not s["simulated"] and s["pairs"] == 8
    rounds = s["rounds"]
    assert 1 <= len(rounds) <= 2 and rounds[0]["pairs_asked"] == 8 and rounds[0]["requests"] >= 8
    assert s["requests"] == sum(r["requests"] for r in rounds) and s["rounds_ended"]
    assert all(r["pairs_asked"] <= 8 for r in rounds[1:])
    with Warehouse(warehouse, read_only=True) as wh:
        held = wh.query('SELECT pair_id, "order", sample_index FROM judgments WHERE status = \'ok\'')
    # round 0: each pair in its first order (its shorter answer shown first); later rounds: the other order
    firsts = _first_orders(warehouse)
    assert len(held) == sum(r["judged"] for r in rounds) and {s for _, _, s in held} == {0}
    assert sum(o == firsts[p] for p, o, _ in held) == rounds[0]["judged"]
    again = curate("judge", "--endpoint", tiny_genrm_server.url, "--strategy", "certify:1", "--target-agreement", "0.9")
    assert again["requests"] == 0 and again["rounds"][0]["requests"] == 0
    # (a judgment of a later rung at its attempt limit is not asked, and not counted: no round plans it)
    assert again["skipped_exhausted"] <= sum(s["failed"].values()) and again["skipped_cached"] == rounds[0]["judged"]
