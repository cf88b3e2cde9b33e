"""The exchange is checked, never trusted: a tampered exchange (local folder and S3-compatible server) merges
what answers its plan, rejects or moves aside the rest with a reason, and never blocks a later merge."""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from datetime import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.judge.client import JudgeRequest, JudgeResult
from tasks.judge.config import JudgeConfig
from tasks.judge.exchange import Exchange, ResultWriter, results_dir, shard_plan, write_plan
from tasks.judge.exchange_checks import ShardPlan, plan_key, results_key, row_problem
from tasks.judge.genrm import Verdict, build_messages, to_a_side
from tasks.judge.merge import merge_exchange_into
from tasks.judge.run import JUDGMENT_SCHEMA, results_table
from tasks.judge.strategies import usage
from warehouse.judging import PairText
from warehouse.store import Warehouse

CONFIG = JudgeConfig()
PAIRS = [PairText(f"p{i}", [{"role": "user", "content": f"q{i}"}], f"A{i}", f"B{i}") for i in range(4)]
PLAN, LABEL, RUN = "plan1", "shard-0-of-1", "run-a"


def _result(pair_id: str, order: str = "ab", verdict: Verdict | None = Verdict(4, 2, 2)) -> JudgeResult:
    request = JudgeRequest(pair_id, order, 0, build_messages(PAIRS[0].history, "a", "b", order))
    request.attempts = request.requests = 1
    if verdict is None:
        return JudgeResult(request, "failed", failure_reason="no_json", raw_text="??")
    return JudgeResult(request, "ok", verdict=verdict, side=to_a_side(verdict, order), raw_text="ok")


def _table(*results: JudgeResult, run: str = RUN) -> pa.Table:
    return results_table(list(results), CONFIG.id, run)


def _exchange(url, secret: str | None = None, pairs=PAIRS) -> Exchange:
    ex = Exchange(url)
    write_plan(ex, PLAN, 1, {0: (pairs, {}, None)}, config=asdict(CONFIG), strategy="swap", secret=secret)
    return ex


def _key(ex: Exchange, secret: str) -> bytes:
    """The key an honest worker signs this shard's results with (bound to the texts of its work file)."""
    return shard_plan(ex, PLAN, LABEL, secret).results_key


def _record(status: str = "completed") -> dict:
    return {"run_id": RUN, "judge_config_id": CONFIG.id, "strategy": "swap", "endpoints": ["http://x/v1"],
            "shard": "0/1", "started_at": str(datetime(2026, 1, 1)), "status": status}


def _ok_pairs(wh: Warehouse) -> set[tuple[str, str]]:
    return {(p, o) for p, o in wh.query("SELECT pair_id, \"order\" FROM judgments WHERE status = 'ok'")}


def _tamper_and_merge(ex: Exchange, warehouse, secret: str | None = None) -> tuple[dict, dict]:
    """A worker's honest files, then forged, incoherent, truncated and corrupt ones beside them."""
    folder = results_dir(ex, PLAN, LABEL)
    key = _key(ex, secret) if secret else None
    writer = ResultWriter(ex, folder, RUN, key)
    writer.write(_table(_result("p0"), _result("p0", "ba"), _result("p1", verdict=None)))
    writer.record(_record())
    # a row for a pair no plan holds, with an impossible margin, beside an honest one
    forged = _table(_result("p2"), _result("ghost")).to_pylist()
    forged[1]["margin_a"] = 99.0
    writer.write(pa.Table.from_pylist(forged, schema=JUDGMENT_SCHEMA))
    # a planned pair whose A-side fields do not follow from its verdict; another run's name on a row
    bad = _table(_result("p3"), _result("p3", "ba")).to_pylist()
    bad[0]["margin_a"], bad[1]["judge_run_id"] = -2.5, "someone-else"
    ex.put(f"{folder}/{RUN}-00003{'.' + _sig(key, bad) if key else ''}.parquet", _bytes(bad))
    # a truncated result file and a corrupt run record
    whole = _bytes(_table(_result("p1", "ba")).to_pylist())
    ex.put(f"{folder}/{RUN}-00004.parquet", whole[: len(whole) // 2])
    ex.put(f"{folder}/other-run.run.json", b'{"run_id": "other-run", "status": ')
    with Warehouse(warehouse) as wh:
        report = merge_exchange_into(wh, ex, secret or "").as_dict()
        again = merge_exchange_into(wh, ex, secret or "").as_dict()
        assert _ok_pairs(wh) == {("p0", "ab"), ("p0", "ba"), ("p2", "ab")}  # nothing forged is a verdict
        assert wh.query("SELECT count(*) FROM judgments WHERE pair_id = 'ghost' OR pair_id = 'p3'") == [(0,)]
        assert wh.query("SELECT status FROM judge_runs WHERE run_id = ?", [RUN]) == [("completed",)]
        assert wh.judging.exchange_rejects()["not_planned"] == 1
    return report, again


def _bytes(rows: list[dict]) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=JUDGMENT_SCHEMA), buffer)
    return buffer.getvalue()


def _sig(key: bytes, rows: list[dict]) -> str:
    from tasks.judge.exchange_checks import signature

    return signature(key, _bytes(rows))


def test_a_tampered_local_exchange_merges_only_what_answers_its_plan(tmp_path):
    ex = _exchange(tmp_path / "exchange")
    report, again = _tamper_and_merge(ex, tmp_path / "w.duckdb")
    assert report["rows"] == 4 and report["files"] == 3  # p0 ab/ba, p1 failed, p2: the honest rows only
    assert report["rejected_rows"] == {"not_planned": 1, "bad_verdict": 1, "wrong_run": 1}
    assert sorted(q["file"].rsplit("/", 1)[1] for q in report["quarantined"]) == ["other-run.run.json",
                                                                                 "run-a-00004.parquet"]
    # moved aside with its reason: a later merge neither reads it again nor fails on it
    quarantined = tmp_path / "exchange" / "quarantine" / "results" / PLAN / LABEL
    assert (quarantined / "run-a-00004.parquet.reason").read_text().startswith("unreadable as judgments")
    assert not (tmp_path / "exchange" / "results" / PLAN / LABEL / "run-a-00004.parquet").exists()
    assert again == {"files": 0, "rows": 0, "run_records": 1, "rejected_rows": {}, "quarantined": [],
                     "authenticated": False}


def test_a_run_record_is_merged_with_what_its_strategy_declares(tmp_path):
    ex = _exchange(tmp_path / "exchange")
    folder = results_dir(ex, PLAN, LABEL)
    ResultWriter(ex, folder, RUN).record({**_record(), "strategy": "adaptive:2"})
    ResultWriter(ex, folder, "run-b").record({**_record(), "run_id": "run-b", "strategy": "swap"})
    ResultWriter(ex, folder, "run-c").record({**_record(), "run_id": "run-c", "strategy": "sometimes"})
    with Warehouse(tmp_path / "w.duckdb") as wh:
        report = merge_exchange_into(wh, ex, "")
        assert wh.query("SELECT run_id, one_order_on_purpose FROM judge_runs ORDER BY run_id") == [
            (RUN, True), ("run-b", False)]
    assert report.run_records == 2
    assert [q["reason"] for q in report.quarantined] == [
        f"run record: unknown strategy 'sometimes': use {usage()}"]  # every registered strategy


def test_a_file_rewritten_after_its_merge_merges_nothing(tmp_path, monkeypatch):
    ex = _exchange(tmp_path / "exchange")
    folder = results_dir(ex, PLAN, LABEL)
    ResultWriter(ex, folder, RUN).write(_table(_result("p0")))
    with Warehouse(tmp_path / "w.duckdb") as wh:
        assert merge_exchange_into(wh, ex, "").rows == 1
        ex.put(f"{folder}/{RUN}-00001.parquet", _bytes(_table(_result("p1")).to_pylist()))
        assert merge_exchange_into(wh, ex, "").rows == 0  # a merged name is never read again
        # rewritten while a merge listed it (the race): moved aside, nothing of it merged
        monkeypatch.setattr(wh.judging, "merged_file_keys", lambda: set())
        report = merge_exchange_into(wh, ex, "")
        assert [q["reason"] for q in report.quarantined] == ["rewritten after it was merged (files are written once)"]
        assert _ok_pairs(wh) == {("p0", "ab")}


def test_with_a_shared_key_only_files_signed_for_their_plan_and_its_texts_merge(tmp_path):
    ex = _exchange(tmp_path / "exchange", "s3cret")
    folder = results_dir(ex, PLAN, LABEL)
    key = _key(ex, "s3cret")
    swapped = [p._replace(response_a=p.response_b, response_b=p.response_a) for p in PAIRS]  # the same pair ids, the answers the other way round
    ResultWriter(ex, folder, RUN, key).write(_table(_result("p0")))
    ResultWriter(ex, folder, "unsigned-run").write(_table(_result("p1", verdict=Verdict(5, 1, 1)), run="unsigned-run"))
    ResultWriter(ex, folder, "other-plan", results_key("s3cret", "plan2", "x")).write(
        _table(_result("p2"), run="other-plan"))
    ResultWriter(ex, folder, "wrong-key", results_key("guess", PLAN, "x")).write(_table(_result("p3"), run="wrong-key"))
    # signed under the plan's key but for other texts (a worker fed swapped answers), or unbound to any texts
    other_texts = _key(_exchange(tmp_path / "other", "s3cret", pairs=swapped), "s3cret")
    ResultWriter(ex, folder, "swapped", other_texts).write(_table(_result("p1"), run="swapped"))
    ResultWriter(ex, folder, "unbound", plan_key("s3cret", PLAN)).write(_table(_result("p2"), run="unbound"))
    signed = ResultWriter(ex, folder, RUN, key)
    signed.record(_record())
    forged = json.loads((tmp_path / "exchange" / "results" / PLAN / LABEL / f"{RUN}.run.json").read_text())
    forged.update(run_id="forged-run", status="completed")
    ex.put(f"{folder}/forged-run.run.json", json.dumps(forged).encode())
    with Warehouse(tmp_path / "w.duckdb") as wh:
        report = merge_exchange_into(wh, ex, "s3cret")
        assert report.authenticated and report.rows == 1 and report.run_records == 1
        assert _ok_pairs(wh) == {("p0", "ab")}
        assert len(report.quarantined) == 6
        assert all("signature" in q["reason"] for q in report.quarantined)
        assert wh.query("SELECT run_id FROM judge_runs") == [(RUN,)]


@pytest.mark.parametrize("plan", ["unsigned", "manifest changed after signing", "signed with another key",
                                  "no manifest"])
def test_a_keyed_merge_trusts_no_file_of_a_plan_it_did_not_sign(tmp_path, plan):
    """The keyed merge checks results against the plan's manifest alone: unsigned, changed, signed under another
    key or missing (a plan written before manifests were), it commits nothing."""
    secret = "s3cret"
    ex = _exchange(tmp_path / "exchange", {"unsigned": None, "signed with another key": "other"}.get(plan, secret))
    path = tmp_path / "exchange" / "plans" / PLAN / f"{LABEL}.parquet"
    key = results_key(secret, PLAN, json.loads(pq.read_schema(path).metadata[b"curator.shard_work"])["texts"])
    manifest = tmp_path / "exchange" / "plans" / PLAN / "manifest.parquet"
    if plan == "manifest changed after signing":  # another pair's digest, its metadata kept as it was
        table = pq.read_table(manifest)
        pq.write_table(table.set_column(0, "pair_id", pa.array(["p9", "p1", "p2", "p3"])), manifest)
    if plan == "no manifest":
        manifest.unlink()
    folder = results_dir(ex, PLAN, LABEL)
    writer = ResultWriter(ex, folder, RUN, key)
    writer.write(_table(_result("p0")))
    writer.record(_record())
    with Warehouse(tmp_path / "w.duckdb") as wh:
        report = merge_exchange_into(wh, ex, secret)
        assert report.rows == 0 and report.run_records == 0 and _ok_pairs(wh) == set()
    reasons = {q["reason"] for q in report.quarantined}
    assert len(report.quarantined) == 2 and len(reasons) == 1
    (reason,) = reasons
    assert reason.startswith(f"its plan {PLAN} {LABEL} is not trusted (")
    assert {"unsigned": "not signed", "manifest changed after signing": "does not match the digests",
            "signed with another key": "signature does not hold", "no manifest": "has no manifest"}[plan] in reason


def _honest_record(ex: Exchange, run: str = RUN, label: str = LABEL, **summary) -> dict:
    record = {**_record(), "run_id": run, "summary": {"judged": 3, "requests": 4, "failed": {"no_json": 1}, **summary}}
    ResultWriter(ex, results_dir(ex, PLAN, label), run).record(record)
    return json.loads(ex.get(results_dir(ex, PLAN, label) + f"/{run}.run.json"))


def test_a_run_record_counts_once_however_often_it_is_copied(tmp_path):
    ex = _exchange(tmp_path / "exchange")
    original = _honest_record(ex)
    folder = results_dir(ex, PLAN, LABEL)
    ex.put(f"{folder}/copy-1.run.json", json.dumps(original).encode())  # under another name
    ex.put(results_dir(ex, PLAN, "shard-1-of-2") + f"/{RUN}.run.json", json.dumps(original).encode())  # another shard
    ex.put(results_dir(ex, "plan2", LABEL) + f"/{RUN}.run.json", json.dumps(original).encode())  # the same, elsewhere
    changed = {**original, "summary": {**original["summary"], "judged": 300}}
    ex.put(results_dir(ex, "plan3", LABEL) + f"/{RUN}.run.json", json.dumps(changed).encode())
    with Warehouse(tmp_path / "w.duckdb") as wh:
        report = merge_exchange_into(wh, ex, "")
        again = merge_exchange_into(wh, ex, "")
        assert wh.runs.judge_run_summaries([RUN, "nobody"]) == {RUN: original["summary"]}
    reasons = sorted(q["reason"] for q in report.quarantined)
    assert reasons == [f"run record: disagrees with run {RUN} as recorded (summary)",
                       "run record: not where its worker writes it (its shard '0/1' is not the folder's shard-1-of-2)",
                       "run record: not where its worker writes it (named 'copy-1.run.json', not after its run "
                       f"'{RUN}')"]
    assert report.run_records == 2 and again.run_records == 2 and again.quarantined == []


@pytest.mark.parametrize("change,problem", [
    ({"summary": {"judged": "many"}}, 'summary.judged is "many", not a count'),
    ({"summary": {"requests": True}}, "summary.requests is true, not a count"),
    ({"summary": {"tokens_in": -5}}, "summary.tokens_in is -5, not a count"),
    ({"summary": {"seconds": float("inf")}}, "summary.seconds is Infinity, not a finite number"),
    ({"summary": {"failed": {"no_json": "1"}}}, 'summary.failed.no_json is "1", not a count'),
    ({"summary": {"endpoints": "http://x"}}, "summary.endpoints is not a list"),
    ({"summary": {"judged_twice": 1}}, "summary.judged_twice is not a field of a JudgeSummary"),
    ({"summary": [1]}, "summary is not an object"),
    ({"started_at": "yesterday"}, 'started_at is "yesterday", not a time'),
    ({"finished_at": 5}, "finished_at is 5, not a time"),
    ({"endpoints": [None]}, "endpoints[0] is null, not a string"),
    ({"error": {"x": 1}}, 'error is {"x": 1}, not a string'),
    ({"admin": True}, "admin is not a field of a WorkerRunRecord"),
    ({"status": "done"}, "status 'done' is not one of ('running', 'completed', 'failed')"),
])
def test_every_field_of_a_run_record_is_typed(tmp_path, change, problem):
    ex = _exchange(tmp_path / "exchange")
    record = {**_record(), "summary": {"judged": 3}, **change}
    ex.put(results_dir(ex, PLAN, LABEL) + f"/{RUN}.run.json", json.dumps(record).encode())
    with Warehouse(tmp_path / "w.duckdb") as wh:
        report = merge_exchange_into(wh, ex, "")
        assert wh.query("SELECT count(*) FROM judge_runs") == [(0,)]
    assert [q["reason"] for q in report.quarantined] == [f"run record: {problem}"]


def test_a_merge_that_got_judgments_and_merged_none_says_why():
    from tasks.judge.merge import nothing_merged

    empty = {"files": 0, "rows": 0, "run_records": 0, "rejected_rows": {}, "quarantined": []}
    unsigned = "no valid signature for its plan (CURATE_JUDGE_EXCHANGE_KEY)"
    assert nothing_merged(empty) is None  # no judgments came: nothing to say
    assert nothing_merged({**empty, "quarantined": [{"file": "results/p/s/r.run.json", "reason": "x"}]}) is None
    files = [{"file": f"results/p/s/r-{i:05d}.parquet", "reason": unsigned} for i in range(8)]
    no_plan = "no plan p2 shard-0-of-1 in the exchange to check it against"
    files.append({"file": "results/p/s/q-00001.parquet", "reason": no_plan})
    assert nothing_merged({**empty, "quarantined": files}) == (
        "judgments arrived from the workers but none could be merged: 9 result files moved to quarantine/ "
        f"({unsigned}: 8; {no_plan}: 1)")
    assert nothing_merged({**empty, "files": 2, "rejected_rows": {"not_planned": 5, "wrong_run": 1}}) == (
        "judgments arrived from the workers but none could be merged: 6 rows rejected (not_planned: 5, wrong_run: 1)")
    assert nothing_merged({**empty, "files": 1, "rows": 1, "quarantined": files}) is None  # some merged: a warning


def test_a_tampered_exchange_on_s3_compatible_storage(s3_server, monkeypatch, tmp_path):
    endpoint, env = s3_server
    options = {"key": env["AWS_ACCESS_KEY_ID"], "secret": env["AWS_SECRET_ACCESS_KEY"],
               "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    monkeypatch.setenv("CURATE_JUDGE_EXCHANGE_OPTIONS", json.dumps(options))
    ex = _exchange("s3://exchange/tampered")
    report, again = _tamper_and_merge(ex, tmp_path / "w.duckdb", secret=None)
    assert report["rejected_rows"] == {"not_planned": 1, "bad_verdict": 1, "wrong_run": 1}
    assert len(report["quarantined"]) == 2 and again["quarantined"] == []
    assert ex.exists(ex.path("quarantine", "results", PLAN, LABEL, "run-a-00004.parquet.reason"))


PLAN_FACTS = ShardPlan(PLAN, CONFIG.id, frozenset({("ab", 0), ("ba", 0)}), frozenset({"p0"}))


@pytest.mark.parametrize("change,reason", [
    ({}, None),
    ({"pair_id": "zz"}, "not_planned"),
    ({"judge_config_id": "jc-other"}, "wrong_config"),
    ({"sample_index": 3}, "unplanned_slot"),
    ({"order": "xy"}, "unplanned_slot"),
    ({"judge_run_id": "x"}, "wrong_run"),
    ({"attempts": -1}, "bad_counts"),
    ({"status": "maybe"}, "bad_status"),
    ({"score_1": 9}, "bad_verdict"),
    ({"ranking": 0}, "bad_verdict"),
    ({"score_a": 1}, "bad_verdict"),
    ({"ranking_a": 5}, "bad_verdict"),
    ({"margin_a": 99.0}, "bad_verdict"),
    ({"failure_reason": "x"}, "bad_verdict"),
    ({"status": "failed"}, "bad_failure"),
    ({"status": "failed", "failure_reason": "no_json", **{k: None for k in ("score_1", "score_2", "ranking", "score_a",
                                                                             "score_b", "ranking_a", "margin_a")}},
     None),
])
def test_each_row_invariant(change, reason):
    row = {**_table(_result("p0")).to_pylist()[0], **change}
    assert row_problem(row, PLAN_FACTS, RUN) == reason


def test_setting_the_key_later_leaves_runs_recorded_as_they_say_and_refuses_any_new_word(tmp_path):
    ex = _exchange(tmp_path / "exchange")  # planned and judged before the key was set
    original = _honest_record(ex)
    with Warehouse(tmp_path / "w.duckdb") as wh:
        assert merge_exchange_into(wh, ex, "").run_records == 1
        keyed = merge_exchange_into(wh, ex, "s3cret")
        assert keyed.run_records == 1 and keyed.quarantined == []  # nothing new in it: left as it is
        changed = {**original, "summary": {**original["summary"], "judged": 300}}
        ex.put(results_dir(ex, PLAN, LABEL) + f"/{RUN}.run.json", json.dumps(changed).encode())
        report = merge_exchange_into(wh, ex, "s3cret")
        assert wh.runs.judge_run_summaries([RUN]) == {RUN: original["summary"]}
    assert report.run_records == 0 and [q["reason"].split(" (")[0] for q in report.quarantined] == [
        f"its plan {PLAN} {LABEL} is not trusted"]


def test_a_merge_without_the_key_says_in_one_line_that_it_authenticates_nothing(tmp_path, caplog):
    ex = _exchange(tmp_path / "exchange", "s3cret")
    folder = results_dir(ex, PLAN, LABEL)
    ResultWriter(ex, folder, RUN, _key(ex, "s3cret")).write(_table(_result("p0")))
    ResultWriter(ex, folder, "other").write(_table(_result("p1"), run="other"))
    with Warehouse(tmp_path / "w.duckdb") as wh, caplog.at_level("WARNING", logger="tasks.judge.merge"):
        report = merge_exchange_into(wh, ex, "")
        merge_exchange_into(wh, ex, "")  # nothing left to merge: nothing to say
    assert not report.authenticated and report.rows == 2
    (said,) = [r.getMessage() for r in caplog.records]
    assert said == ("judge exchange: merging 2 result files without CURATE_JUDGE_EXCHANGE_KEY: nothing merged is "
                    "authenticated, a file is only checked against its plan (1 of them are signed, their signatures "
                    "unchecked)") and "\n" not in said
