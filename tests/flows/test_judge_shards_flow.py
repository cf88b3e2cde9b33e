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
from schemas.summaries import JudgeSummary, MergeSummary, ShardedJudgeSummary
from tasks.judge.exchange import Exchange, read_work, result_files
from testing.genrm_standin import StandinConfig, StandinProcess
from tests.flows.conftest import ingest_clean_pairs
from tests.summary_checks import assert_summary
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
    for s in summaries:
        assert_summary(s, JudgeSummary)
    assert _judgments(path) == []  # workers never touch the warehouse

    merged = merge_exchange(path, exchange)
    assert_summary(merged, MergeSummary)
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


def test_a_worker_killed_mid_shard_then_rerun_judges_only_the_rest(tmp_path, ingested, prefect_server):
    path, n = ingested
    exchange = tmp_path / "exchange"
    work = plan_shards(path, str(exchange), 1, "swap", None)["work"][0]
    batch, in_flight = 8, 4
    env = {**os.environ, "CURATE_JUDGE_WRITE_BATCH": str(batch), "CURATE_JUDGE_MAX_IN_FLIGHT": str(in_flight),
           "PREFECT_API_URL": prefect_server}
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


# ---------------------------------------------------------------- the exchange's key, on both sides or one

KEY = "CURATE_JUDGE_EXCHANGE_KEY"


def _curate(*args, env):
    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    started = time.perf_counter()
    done = subprocess.run([curate, *args], env=env, capture_output=True, text=True, timeout=300)
    return done, time.perf_counter() - started


@pytest.mark.parametrize("orchestrator,worker", [("k1", None), (None, "k1"), ("k1", "k2")])
def test_a_key_on_one_side_only_or_keys_that_differ_are_refused_before_any_request(tmp_path, ingested, monkeypatch,
                                                                                    orchestrator, worker):
    from tasks.judge.exchange import UntrustedWorkError

    path, _ = ingested
    if orchestrator:
        monkeypatch.setenv(KEY, orchestrator)
    work = next(iter(plan_shards(path, str(tmp_path / "exchange"), 1, "swap", None)["work"].values()))
    monkeypatch.delenv(KEY, raising=False)
    if worker:
        monkeypatch.setenv(KEY, worker)
    expected = {("k1", None): "signed .* and this side holds no key: a key on one side only",
                (None, "k1"): "not signed .* and this side holds CURATE_JUDGE_EXCHANGE_KEY: a key on one side only",
                ("k1", "k2"): "signature does not hold under this side's CURATE_JUDGE_EXCHANGE_KEY"}
    expected = expected[(orchestrator, worker)]
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        with pytest.raises(UntrustedWorkError, match=expected):
            judge_worker(work, endpoints=[server.url])
        # by hand, as a GPU worker's operator runs it: one line, exit 2, before Prefect starts
        env = {k: v for k, v in os.environ.items() if k != KEY} | ({KEY: worker} if worker else {})
        done, seconds = _curate("judge-shard", work, "--endpoint", server.url, env=env)
        assert server.stats()["requests"] == 0
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: this shard's work file is refused before anything is judged")
    assert lines[1].startswith("hint: set the same CURATE_JUDGE_EXCHANGE_KEY") and seconds < 15
    assert not list((tmp_path / "exchange").glob("results/*/*/*"))  # no record, no heartbeat: nothing was started


def test_the_adversarys_swapped_work_file_is_refused_by_a_keyed_worker(tmp_path, ingested, monkeypatch):
    from tasks.judge.exchange import UntrustedWorkError

    path, _ = ingested
    monkeypatch.setenv(KEY, "k1")
    plan = plan_shards(path, str(tmp_path / "exchange"), 2, "swap", None)
    work = plan["work"][0]
    table = pq.read_table(work)
    pq.write_table(table.set_column(2, "response_a", table.column("response_b"))
                   .set_column(3, "response_b", table.column("response_a")), work)
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        with pytest.raises(UntrustedWorkError, match="does not match the digests it was written with"):
            judge_worker(work, endpoints=[server.url])
        summary = judge_worker(plan["work"][1], endpoints=[server.url])  # the untouched shard is judged
        assert server.stats()["requests"] == 2 * summary["pairs"]
    merged = merge_exchange(path, str(tmp_path / "exchange"))
    assert merged["authenticated"] and merged["rows"] == 2 * summary["pairs"] and merged["quarantined"] == []


@pytest.fixture
def dispatch_here(monkeypatch):
    """The sharded flow's dispatch done in this process: each shard's `judge-worker` run is a subflow run on
    the same (ephemeral) Prefect API, on the stand-in, with `worker_env` as that worker's environment; then
    `after(work)` does what an adversary or an accident does to the exchange. Everything else is the flow's."""
    import types

    import flows.judge_shards as shards

    calls: dict = {"worker_env": {}, "after": lambda work: None}
    server = StandinProcess(StandinConfig(latency_mean=0.005))
    server.__enter__()

    def run_deployment(name, parameters, timeout, flow_run_name):
        with monkeypatch.context() as m:
            for k, v in calls["worker_env"].items():
                m.delenv(k, raising=False) if v is None else m.setenv(k, v)
            state = judge_worker(parameters["work"], endpoints=[server.url], return_state=True)
        calls["after"](parameters["work"])
        return types.SimpleNamespace(id=state.state_details.flow_run_id)

    monkeypatch.setattr(shards, "run_deployment", run_deployment)
    monkeypatch.setattr(shards, "_require_deployment", lambda name: None)
    calls["server"] = server
    yield calls
    server.__exit__(None, None, None)


def test_sharded_judging_keyed_counts_each_run_once_however_its_record_is_copied(tmp_path, ingested, monkeypatch,
                                                                                 dispatch_here):
    from flows.judge_shards import judge_sharded

    path, n = ingested
    monkeypatch.setenv(KEY, "k1")

    def copy_the_record(work):
        ex, _ = Exchange.of_work(work)
        for record in ex.glob(ex.path("results", "*", "*", "*.run.json")):
            folder = record.rsplit("/", 1)[0]
            ex.put(f"{folder}/copy-1.run.json", ex.get(record))
            ex.put(f"{folder}/copy-2.run.json", ex.get(record))

    dispatch_here["after"] = copy_the_record
    summary = judge_sharded(2, strategy="swap", warehouse=path, exchange=str(tmp_path / "exchange"))
    assert dispatch_here["server"].stats()["requests"] == 2 * n
    assert summary["judged"] == 2 * n and summary["requests"] == 2 * n  # not three times over
    assert_summary(summary, ShardedJudgeSummary)
    assert summary["merged"]["authenticated"] and summary["merged"]["rows"] == 2 * n
    assert {q["reason"].split(" (")[0] for q in summary["merged"]["quarantined"]} == {
        "run record: not where its worker writes it"}


def test_a_night_whose_every_result_was_quarantined_fails_naming_why(tmp_path, ingested, monkeypatch, dispatch_here):
    from flows.judge_shards import NothingMergedError, judge_sharded

    path, n = ingested
    monkeypatch.setenv(KEY, "k1")

    def strip_signatures(work):  # as a worker of another version, or someone in between, would leave them
        ex, _ = Exchange.of_work(work)
        for f in result_files(ex):
            plan, label, run, sig = f.parts
            data = ex.get(f.path)
            ex.fs.rm_file(f.path)
            ex.put(f.path.replace(f".{sig}.parquet", ".parquet"), data)

    dispatch_here["after"] = strip_signatures
    with pytest.raises(NothingMergedError) as err:
        judge_sharded(2, strategy="swap", warehouse=path, exchange=str(tmp_path / "exchange"))
    files = len(list((tmp_path / "exchange" / "quarantine").rglob("*.parquet")))
    assert files > 0 and dispatch_here["server"].stats()["requests"] == 2 * n
    assert str(err.value) == ("judgments arrived from the workers but none could be merged: "
                              f"{files} result files moved to quarantine/ (no valid signature for its plan "
                              f"(CURATE_JUDGE_EXCHANGE_KEY): {files})")
    assert "\n" not in str(err.value) and KEY in err.value.hint
    assert _judgments(path) == []


def test_a_keyless_worker_under_a_keyed_orchestrator_fails_its_shards_naming_the_key(tmp_path, ingested, monkeypatch,
                                                                                     dispatch_here):
    from flows.judge_shards import ShardsIncompleteError, judge_sharded

    path, _ = ingested
    monkeypatch.setenv(KEY, "k1")
    dispatch_here["worker_env"] = {KEY: None}
    with pytest.raises(ShardsIncompleteError) as err:
        judge_sharded(2, strategy="swap", warehouse=path, exchange=str(tmp_path / "exchange"))
    assert dispatch_here["server"].stats()["requests"] == 0
    message = str(err.value)
    assert message.startswith("2 of 2 judge shards did not finish (0/2, 1/2 failed: ") and message.count(KEY) == 1
    assert "a key on one side only" in message and "\n" not in message


def test_the_pipelines_sharded_judging_runs_rounds_one_deployment_run_per_shard_of_each(tmp_path, ingested,
                                                                                        monkeypatch, dispatch_here):
    """`curate run --shards N` with a strategy in rounds: the pipeline judges each round's shards through the
    judge deployment (each run here as its subflow), toward its policy's target, keyed, and asks what the rounds
    of one process ask on the same pairs."""
    from flows.judge import judge
    from flows.pipeline import curate_pipeline

    path, n = ingested
    alone = tmp_path / "alone.duckdb"
    alone.write_bytes(open(path, "rb").read())
    policy = tmp_path / "certified.toml"
    policy.write_text("[policy]\ntarget_agreement = 0.9\n")
    monkeypatch.setenv(KEY, "k1")
    server = dispatch_here["server"]
    one = judge(endpoints=[server.url], strategy="certify:1", policy_path=str(policy), warehouse=str(alone))
    server.reset_stats()
    run = curate_pipeline(sources=[], skip=["ingest", "version", "publish"], strategy="certify:1", judge_shards=2,
                          policy_path=str(policy), exchange=str(tmp_path / "exchange"), warehouse=path)
    s = run["judge"]
    assert_summary(s, ShardedJudgeSummary)
    keys = ("pairs_asked", "requests", "judged", "certified", "how")
    assert [{k: r[k] for k in keys} for r in s["rounds"]] == [{k: r[k] for k in keys} for r in one["rounds"]]
    assert len(s["rounds"]) == 2 and s["rounds"][0]["pairs_asked"] == n and s["rounds"][1]["pairs_asked"] > 0
    assert all({x["state"] for x in r["shards"]} == {"COMPLETED"} for r in s["rounds"])
    assert s["requests"] == server.stats()["requests"] == one["requests"] and s["merged"]["authenticated"]
    assert sorted(_judgments(path))[0][:4] and [j[:4] for j in _judgments(path)] == [j[:4] for j in _judgments(alone)]


def test_judging_in_shards_here_plans_signed_shards_and_merges_them_once(tmp_path, ingested, monkeypatch):
    """`curate judge --shards N` with a strategy that does not judge in rounds: one plan of N signed shards,
    each judged in this process by the worker's flow, merged; a rerun merges nothing twice and sends nothing."""
    from flows.judge_shards import judge_sharded_here

    path, n = ingested
    monkeypatch.setenv(KEY, "k1")
    exchange = str(tmp_path / "exchange")
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        s = judge_sharded_here(3, endpoints=[server.url], strategy="swap", exchange=exchange, warehouse=path)
        assert server.stats()["requests"] == 2 * n
        again = judge_sharded_here(3, endpoints=[server.url], strategy="swap", exchange=exchange, warehouse=path)
        assert server.stats()["requests"] == 2 * n
    assert_summary(s, ShardedJudgeSummary)
    assert "rounds" not in s and [x["state"] for x in s["shards"]] == ["COMPLETED"] * 3
    assert len({x["plan_id"] for x in s["shards"]}) == 1 and s["merged"]["authenticated"]
    assert s["judged"] == s["requests"] == s["merged"]["rows"] == 2 * n and len(_judgments(path)) == 2 * n
    assert again["pending"] == 0 and again["merged"] == {} and again["merged_before"]["rows"] == 0


# ---------------------------------------------------------------- one plan's key against another plan's pairs


def _forged_results(ex: Exchange, plan: str, label: str, run: str, pairs, config_id: str, key: bytes) -> None:
    """A result file as a forger writes it: an 'ok' verdict for A on every pair, in both orders, signed with `key`."""
    from tasks.judge.client import JudgeRequest, JudgeResult
    from tasks.judge.exchange import ResultWriter, results_dir
    from tasks.judge.genrm import Verdict, to_a_side
    from tasks.judge.run import results_table

    results = []
    for p in pairs:
        for order, verdict in (("ab", Verdict(5, 1, 1)), ("ba", Verdict(1, 5, 6))):
            request = JudgeRequest(p.pair_id, order, 0, [])
            request.attempts = request.requests = 1
            results.append(JudgeResult(request, "ok", verdict=verdict, side=to_a_side(verdict, order), raw_text="{}"))
    ResultWriter(ex, results_dir(ex, plan, label), run, key).write(results_table(results, config_id, run))


def test_one_plans_key_signs_nothing_for_another_plans_pairs(tmp_path, ingested, monkeypatch):
    """The attack: someone holding only P1's plan key (not the shared secret) rewrites P1's shard 0 to hold pairs
    of a newer plan P2 with their answers swapped, re-signed with P1's key, and writes result files signed with
    keys made from P1's key alone. An honest worker refuses the shard in one line before any request; the merge
    moves every forged result aside (even those a worker holding the secret would sign after judging the forged
    shard); P2's honest verdicts are the ones stored."""
    import hashlib
    import hmac

    from flows.judge import judge
    from tasks.judge.exchange import UntrustedWorkError, write_work
    from tasks.judge.exchange_checks import plan_key, record_signature, results_key

    path, n = ingested
    alone = tmp_path / "alone.duckdb"
    alone.write_bytes(open(path, "rb").read())
    exchange = str(tmp_path / "exchange")
    monkeypatch.setenv(KEY, "k1")
    p1 = plan_shards(path, exchange, 2, "swap", 20)
    p2 = plan_shards(path, exchange, 2, "swap", None)
    ex, p1_work = Exchange.of_work(p1["work"][0])
    planned_p1 = {p.pair_id for w in p1["work"].values() for p in read_work(*Exchange.of_work(w), "k1").pairs}
    theirs = [p for w in p2["work"].values() for p in read_work(*Exchange.of_work(w), "k1").pairs
              if p.pair_id not in planned_p1]
    swapped = [p._replace(response_a=p.response_b, response_b=p.response_a) for p in theirs]
    # the forger's shard: P2's pairs, answers swapped, P1's name, signed with P1's key
    original = json.loads(pq.read_schema(p1_work).metadata[b"curator.shard_work"])
    stolen = plan_key("k1", p1["plan_id"])
    table, meta = write_work(ex, p1_work, plan=p1["plan_id"], shard="0/2", config=original["config"],
                             strategy="swap", pairs=swapped, states={})
    meta.update(signed=True)
    meta["signature"] = record_signature(stolen, meta)
    pq.write_table(table.replace_schema_metadata({b"curator.shard_work": json.dumps(meta).encode()}), p1_work)
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        with pytest.raises(UntrustedWorkError, match=f"pair .* is not in plan {p1['plan_id']}'s manifest for shard"):
            judge_worker(p1["work"][0], endpoints=[server.url])
        env = {**os.environ, KEY: "k1"}
        done, _ = _curate("judge-shard", p1["work"][0], "--endpoint", server.url, env=env)
        assert server.stats()["requests"] == 0
    assert done.returncode == 2 and done.stderr.startswith("error: this shard's work file is refused before anything "
                                                           "is judged: pair ")
    assert len(done.stderr.strip().splitlines()) == 2  # the line and its hint
    # forged results: keys made from P1's key alone (no worker at all), and the key a worker holding the secret
    # would sign with after judging the forged shard: none is the key of the texts P1's manifest holds
    config_id = p1["judge_config_id"]
    made = hmac.new(stolen, f"curator-exchange-results\0{meta['texts']}".encode(), hashlib.sha256).digest()
    for run, plan, key in (("from-plan-key", p1["plan_id"], stolen), ("derived", p1["plan_id"], made),
                           ("forged-shard", p1["plan_id"], results_key("k1", p1["plan_id"], meta["texts"])),
                           ("into-p2", p2["plan_id"], stolen)):
        _forged_results(ex, plan, "shard-0-of-2", run, swapped, config_id, key)
    before = merge_exchange(path, exchange)
    assert before["authenticated"] and before["rows"] == 0 and _judgments(path) == []
    assert sorted(q["reason"] for q in before["quarantined"]) == [
        "no valid signature for its plan (CURATE_JUDGE_EXCHANGE_KEY)"] * 4
    # P2's honest workers, then the merge: the verdicts stored are theirs, as one process judges the same pairs
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        for work in p2["work"].values():
            judge_worker(work, endpoints=[server.url])
        judge(endpoints=[server.url], strategy="swap", warehouse=str(alone))
    merged = merge_exchange(path, exchange)
    assert merged["rows"] == 2 * n and merged["quarantined"] == []

    def margins(warehouse):
        with Warehouse(warehouse, read_only=True) as wh:
            return sorted(wh.query('SELECT pair_id, "order", status, margin_a FROM judgments'))

    assert margins(path) == margins(alone) and len(margins(path)) == 2 * n


def test_sharded_judging_asks_the_exhausted_again_only_when_told(tmp_path, ingested, monkeypatch):
    """In shards too: judgments a garbage judge exhausted are planned no more, until a run is told to retry them;
    that run's plan is another plan (its workers fold no result of before) and asks exactly them."""
    from common.settings import get_settings
    from flows.judge_shards import judge_sharded_here

    path, n = ingested
    monkeypatch.setenv(KEY, "k1")
    monkeypatch.setenv("CURATE_JUDGE_MAX_ATTEMPTS", "1")
    get_settings.cache_clear()
    exchange = str(tmp_path / "exchange")
    with StandinProcess(StandinConfig(latency_mean=0.005, malformed_rate=1.0)) as garbage:
        first = judge_sharded_here(2, endpoints=[garbage.url], strategy="swap", exchange=exchange, warehouse=path)
    assert first["merged"]["rows"] == 2 * n and first["judged"] == 0
    with StandinProcess(StandinConfig(latency_mean=0.005)) as good:
        plain = judge_sharded_here(2, endpoints=[good.url], strategy="swap", exchange=exchange, warehouse=path)
        assert good.stats()["requests"] == 0
        retried = judge_sharded_here(2, endpoints=[good.url], strategy="swap", exchange=exchange, warehouse=path,
                                     retry_exhausted=True)
        assert good.stats()["requests"] == 2 * n
    assert (plain["pending"], plain["skipped_exhausted"]) == (0, 2 * n)
    assert (retried["reopened_exhausted"], retried["judged"]) == (2 * n, 2 * n)
    assert retried["plan_id"] != first["plan_id"]
    assert_summary(retried, ShardedJudgeSummary)
    assert {r[3] for r in _judgments(path)} == {"ok"}
