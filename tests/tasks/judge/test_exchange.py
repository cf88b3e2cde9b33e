"""The judge exchange folder: work files round-trip, result batches are whole files, earlier results fold."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.judge.exchange import (
    Exchange,
    Heartbeat,
    HeartbeatWatch,
    ResultWriter,
    fold_results,
    plan_id,
    read_result,
    read_work,
    result_files,
    results_dir,
    run_record_files,
    work_path,
    write_plan,
    write_work,
)
from tasks.judge.run import JUDGMENT_SCHEMA
from tasks.judge.run import JudgmentState as S
from warehouse.judging import PairText

PAIRS = [PairText("p1", [{"role": "user", "content": "héllo"}], "A one", "B one"),
         PairText("p2", [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                         {"role": "user", "content": "q2"}], "A two", "B two")]
CONFIG = {"model": "m", "served_revision": "main", "prompt_version": "v1", "temperature": 0.6, "top_p": 0.95,
          "max_tokens": 100}


def _records(ex):
    return [json.loads(ex.get(path)) for path in run_record_files(ex)]


def _rows(*rows):
    base = {name: None for name in JUDGMENT_SCHEMA.names}
    out = []
    for pair_id, order, status, attempts, margin in rows:
        out.append({**base, "pair_id": pair_id, "judge_config_id": "jc", "order": order, "sample_index": 0,
                    "status": status, "attempts": attempts, "margin_a": margin, "score_a": 3 if margin else None,
                    "score_b": 2 if margin else None, "judge_run_id": "r", "finished_at": datetime(2026, 1, 1)})
    return pa.Table.from_pylist(out, schema=JUDGMENT_SCHEMA)


def test_work_file_round_trips_pairs_states_and_the_plan(tmp_path):
    ex = Exchange(tmp_path)
    states = {("p1", "ab", 0): S("ok", 1, 1.5, 4, 2), ("p2", "ba", 0): S("failed", 2, None, None, None)}
    path = work_path(ex, "plan1", 1, 3)
    write_work(ex, path, plan="plan1", shard="1/3", config=CONFIG, strategy="swap", pairs=PAIRS, states=states)
    assert path.endswith("/plans/plan1/shard-1-of-3.parquet") and not list((tmp_path / "plans").rglob(".*tmp"))
    # a worker finds the exchange from the work file's location alone
    found, work_file = Exchange.of_work(ex.url_of(path))
    assert found.url == ex.url and work_file == path
    work = read_work(found, work_file)
    assert (work.plan_id, work.shard, work.label, work.strategy, work.config) == ("plan1", "1/3", "shard-1-of-3", "swap", CONFIG)
    assert work.pairs == PAIRS and work.states == states


def test_a_work_file_keeps_the_layout_and_digests_of_the_files_already_written(tmp_path):
    """Workers of one release read work files of another: the texts in the order a judge reads them, each state
    as a judgment state, and digests (and a signature over them) that stay what they were for the same work."""
    from tasks.judge.exchange import STATE_TYPE, WORK_SCHEMA
    from tasks.judge.exchange_checks import STATE_COLUMNS, TEXT_COLUMNS, WANTED_COLUMNS

    assert TEXT_COLUMNS == PairText._fields == ("pair_id", "history", "response_a", "response_b")
    # a round's judgments per pair come last, and only in a round's files: any other is written as it was
    assert tuple(WORK_SCHEMA.names) == (*TEXT_COLUMNS, *STATE_COLUMNS, *WANTED_COLUMNS)
    assert [f.name for f in STATE_TYPE.value_type] == ["order", "sample_index", *S._fields]
    pairs = [PAIRS[0], PairText("p2", PAIRS[1].history, "A two", "")]
    states = {("p1", "ab", 0): S("failed", 2, None, None, None, 3, "no_json"), ("p2", "ba", 1): S("ok", 1, 1.5, 4, 2, 1)}
    ex = Exchange(tmp_path)
    (path,) = write_plan(ex, "plan1", 2, {0: (pairs, states, None)}, config={"model": "m"}, strategy="swap",
                         secret="s3cret").values()
    meta = json.loads(pq.read_schema(path).metadata[b"curator.shard_work"])
    assert pq.read_schema(path).names == [*TEXT_COLUMNS, *STATE_COLUMNS] and "wanted" not in meta
    assert (meta["texts"], meta["states"], meta["signature"]) == (
        "1cd9a1d0a1ece025a187cd7f03bda45c", "4767cd881b513d1df077b8b0cb04f0bc", "0f1c1c4fa9031777fea5be67d6bee1db")
    work = read_work(ex, path, "s3cret")
    assert work.pairs == pairs and all(isinstance(p, PairText) for p in work.pairs)
    assert work.pairs[1].pair_id == "p2" and work.pairs[1].history[-1]["content"] == "q2"
    # the results key comes from the secret, the plan and the texts (never from the plan's key alone)
    assert work.results_key.hex() == "51cf76553ee12b0ba8dfe0ad4a85bcab5fcba300dc67fc4c45bbc10f91823cfe"


def test_a_rounds_work_file_carries_the_judgments_asked_of_each_pair_under_its_digests(tmp_path):
    """A round's shard (sharded rounds) names exactly what it asks of each pair; a change to that, or dropping it
    (the worker would then ask the strategy's own judgments), is refused like a change to the texts."""
    from tasks.judge.exchange import UntrustedWorkError

    ex = Exchange(tmp_path)
    wanted = {"p1": (("ba", 0),), "p2": (("ab", 1), ("ba", 1))}
    (path,) = write_plan(ex, "plan2", 1, {0: (PAIRS, {}, wanted)}, config=CONFIG, strategy="certify:2",
                         secret="s3cret").values()
    assert read_work(ex, path, "s3cret").wanted == wanted
    table = pq.read_table(path)
    meta = table.schema.metadata
    changed = table.set_column(5, "wanted", pa.array([[{"order": "ab", "sample_index": 1}],
                                                      [{"order": "ab", "sample_index": 1}]], table.column(5).type))
    for bad in (changed, table.drop_columns(["wanted"])):
        pq.write_table(bad.replace_schema_metadata(meta), path)
        with pytest.raises(UntrustedWorkError, match="does not match the digests it was written with"):
            read_work(ex, path, "s3cret")
    # unsigned too: a careless change is caught by the digests
    write_plan(ex, "plan2", 1, {0: (PAIRS, {}, wanted)}, config=CONFIG, strategy="certify:2")
    pq.write_table(changed.replace_schema_metadata(pq.read_table(path).schema.metadata), path)
    with pytest.raises(UntrustedWorkError, match="does not match the digests"):
        read_work(ex, path)


def test_reading_a_missing_or_foreign_file_is_a_clear_error(tmp_path):
    ex = Exchange(tmp_path)
    with pytest.raises(FileNotFoundError, match="pointed at the orchestrator's exchange"):
        read_work(ex, ex.path("plans", "p", "nope.parquet"))
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    with pytest.raises(ValueError, match="not a shard work file"):
        read_work(ex, ex.path("other.parquet"))
    with pytest.raises(ValueError, match="not a shard work file's location"):
        Exchange.of_work(str(tmp_path / "somewhere.parquet"))


def test_plan_id_names_the_pending_work():
    assert plan_id("jc", "swap", ["a", "b"]) == plan_id("jc", "swap", ["a", "b"])
    assert len({plan_id("jc", "swap", ["a", "b"]), plan_id("jc", "swap", ["a"]), plan_id("jc", "single", ["a", "b"]),
                plan_id("jc2", "swap", ["a", "b"])}) == 4
    # a round's plan: the same pairs asked other judgments is another plan, the same ones the same plan
    asked = {"a": [("ba", 0)], "b": [("ba", 0)]}
    assert plan_id("jc", "certify:2", ["a", "b"], asked) == plan_id("jc", "certify:2", ["a", "b"], dict(asked))
    assert len({plan_id("jc", "certify:2", ["a", "b"], asked), plan_id("jc", "certify:2", ["a", "b"]),
                plan_id("jc", "certify:2", ["a", "b"], {**asked, "b": [("ab", 1), ("ba", 1)]})}) == 3


def test_result_writer_numbers_batches_and_fold_prefers_ok_then_attempts(tmp_path):
    ex = Exchange(tmp_path)
    folder = results_dir(ex, "plan1", "shard-0-of-1")
    writer = ResultWriter(ex, folder, "run-a")
    writer.write(_rows(("p1", "ab", "failed", 1, None), ("p2", "ab", "ok", 1, 0.5)))
    writer.write(_rows())  # an empty batch writes no file
    writer.write(_rows(("p1", "ab", "ok", 2, -1.5), ("p2", "ba", "failed", 1, None)))
    writer.record({"run_id": "run-a", "status": "running"})
    local = tmp_path / "results" / "plan1" / "shard-0-of-1"
    assert sorted(p.name for p in local.glob("*.parquet")) == ["run-a-00001.parquet", "run-a-00002.parquet"]
    files = result_files(ex)
    assert [f.key for f in files] == ["results/plan1/shard-0-of-1/run-a-00001.parquet",
                                      "results/plan1/shard-0-of-1/run-a-00002.parquet"]
    table, digest = read_result(ex, files[0])
    assert table.num_rows == 2 and len(digest) == 32
    assert _records(ex) == [{"run_id": "run-a", "status": "running"}]
    # the packet said p2/ba had failed twice: a later single failure does not lower the count
    states = {("p2", "ba", 0): S("failed", 2, None, None, None), ("p1", "ba", 0): S("ok", 1, 0.5, 3, 2)}
    assert fold_results(states, ex, folder) == 2
    assert states[("p1", "ab", 0)] == S("ok", 2, -1.5, 3, 2)
    assert states[("p2", "ab", 0)] == S("ok", 1, 0.5, 3, 2)
    assert states[("p2", "ba", 0)] == S("failed", 2, None, None, None)
    assert states[("p1", "ba", 0)] == S("ok", 1, 0.5, 3, 2)
    assert fold_results({}, ex, ex.path("absent")) == 0


def test_a_worker_run_is_recorded_around_its_block_as_the_warehouse_records_one(tmp_path):
    ex = Exchange(tmp_path)
    writer = ResultWriter(ex, results_dir(ex, "plan1", "shard-0-of-1"), "run-a")
    record = {"run_id": "run-a", "strategy": "swap"}
    with writer.recorded_run(record) as outcome:
        (started,) = _records(ex)
        assert started["status"] == "running" and "finished_at" not in started
        record["template"] = "tpl-1"  # learned inside the block: in the later records
        outcome.summary = {"judged": 2}
    (done,) = _records(ex)
    assert (done["status"], done["summary"], done["template"]) == ("completed", {"judged": 2}, "tpl-1")
    assert done["started_at"] == started["started_at"] <= done["finished_at"]

    failing = ResultWriter(ex, results_dir(ex, "plan1", "shard-0-of-1"), "run-b")
    with pytest.raises(RuntimeError, match="server gone"):
        with failing.recorded_run({"run_id": "run-b", "strategy": "swap"}):
            raise RuntimeError("server gone")
    failed = next(r for r in _records(ex) if r["run_id"] == "run-b")
    assert failed["status"] == "failed" and failed["error"] == "RuntimeError: server gone" and "summary" not in failed


def test_liveness_is_the_heartbeat_changing_on_the_watchers_clock_not_a_file_time(tmp_path):
    ex = Exchange(tmp_path)
    folder = results_dir(ex, "plan1", "shard-0-of-1")
    watch = HeartbeatWatch(ex)
    assert watch.last_change(folder, now=100.0) is None
    with Heartbeat(ex, folder, "run-a", every=0.05) as beat:
        assert watch.last_change(folder, now=200.0) == 200.0  # written on entry, not on the thread's first beat
        time.sleep(0.3)
        assert beat.beats >= 3
        assert watch.last_change(folder, now=300.0) == 300.0  # a new beat since: alive at 300 on our clock
    assert watch.last_change(folder, now=400.0) == 300.0  # the worker stopped: no change after 300
    # a file's modification time says nothing: touching it without new content is not a beat
    (tmp_path / "results" / "plan1" / "shard-0-of-1" / "run-a.heartbeat").touch()
    assert watch.last_change(folder, now=500.0) == 300.0


def test_the_exchange_on_s3_compatible_object_storage(s3_server, monkeypatch):
    """The same exchange on a real S3-compatible server (moto's, over HTTP): work, results, records and
    heartbeats; credentials from storage options (a block or CURATE_JUDGE_EXCHANGE_OPTIONS), never shown."""
    endpoint, env = s3_server
    options = {"key": env["AWS_ACCESS_KEY_ID"], "secret": env["AWS_SECRET_ACCESS_KEY"],
               "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    monkeypatch.setenv("CURATE_JUDGE_EXCHANGE_OPTIONS", json.dumps(options))
    ex = Exchange("s3://exchange/run-1")
    assert "curate-test-secret" not in repr(ex)
    path = work_path(ex, "plan1", 0, 2)
    write_work(ex, path, plan="plan1", shard="0/2", config=CONFIG, strategy="swap", pairs=PAIRS,
               states={("p1", "ab", 0): S("ok", 1, 1.5, 4, 2)})
    url = ex.url_of(path)
    assert url == "s3://exchange/run-1/plans/plan1/shard-0-of-2.parquet"
    worker_ex, work_file = Exchange.of_work(url)
    assert read_work(worker_ex, work_file).pairs == PAIRS
    folder = results_dir(worker_ex, "plan1", "shard-0-of-2")
    writer = ResultWriter(worker_ex, folder, "run-a")
    writer.write(_rows(("p1", "ab", "ok", 1, 0.5)))
    writer.write(_rows(("p2", "ba", "failed", 1, None)))
    writer.record({"run_id": "run-a", "status": "completed"})
    watch = HeartbeatWatch(ex)
    with Heartbeat(worker_ex, folder, "run-a", every=0.1):
        first = watch.last_change(folder, now=1.0)
        time.sleep(0.5)
        assert first == 1.0 and watch.last_change(folder, now=2.0) == 2.0
    assert [f.key for f in result_files(ex)] == ["results/plan1/shard-0-of-2/run-a-00001.parquet",
                                                 "results/plan1/shard-0-of-2/run-a-00002.parquet"]
    assert _records(ex) == [{"run_id": "run-a", "status": "completed"}]
    states: dict = {}
    assert fold_results(states, ex, folder) == 2 and states[("p1", "ab", 0)].status == "ok"


def test_storage_options_that_are_not_json_are_refused_without_echoing_them(monkeypatch):
    from tasks.judge.exchange import storage_options

    monkeypatch.setenv("CURATE_JUDGE_EXCHANGE_OPTIONS", "secret=hunter2")
    with pytest.raises(ValueError) as err:
        storage_options()
    assert "hunter2" not in str(err.value)


def _signed_work(tmp_path, secret="s3cret", pairs=PAIRS):
    ex = Exchange(tmp_path / "exchange")
    (path,) = write_plan(ex, "plan1", 2, {0: (pairs, {("p1", "ab", 0): S("failed", 2, None, None, None)}, None)},
                         config=CONFIG, strategy="swap", secret=secret).values()
    return ex, path


def _rewrite(path, change):
    """Rewrite a work file as someone with write access to the storage would: its metadata kept as it was."""
    table = pq.read_table(path)
    pq.write_table(change(table), path)


def test_a_signed_work_file_is_judged_only_unchanged_and_by_a_worker_holding_the_key(tmp_path):
    from tasks.judge.exchange import UntrustedWorkError

    ex, path = _signed_work(tmp_path)
    work = read_work(ex, path, "s3cret")
    assert work.pairs == PAIRS and work.results_key is not None
    with pytest.raises(UntrustedWorkError, match="signed .* and this side holds no key: a key on one side only") as err:
        read_work(ex, path, None)
    assert "CURATE_JUDGE_EXCHANGE_KEY" in err.value.hint
    with pytest.raises(UntrustedWorkError, match="signature does not hold under this side's CURATE_JUDGE_EXCHANGE_KEY"):
        read_work(ex, path, "another key")
    # the attack: the answers swapped (the pair ids ignore their order), the signed metadata kept
    _rewrite(path, lambda t: t.set_column(2, "response_a", t.column("response_b"))
             .set_column(3, "response_b", t.column("response_a")))
    with pytest.raises(UntrustedWorkError, match="does not match the digests it was written with"):
        read_work(ex, path, "s3cret")
    # ... and the digests recomputed too: the signature, which only the orchestrator can make, fails
    meta = json.loads(pq.read_schema(path).metadata[b"curator.shard_work"])
    from tasks.judge.exchange_checks import STATE_COLUMNS, TEXT_COLUMNS, table_digest

    table = pq.read_table(path)
    meta.update(texts=table_digest(table, TEXT_COLUMNS), states=table_digest(table, STATE_COLUMNS))
    pq.write_table(table.replace_schema_metadata({b"curator.shard_work": json.dumps(meta).encode()}), path)
    with pytest.raises(UntrustedWorkError, match="signature does not hold"):
        read_work(ex, path, "s3cret")
    # unsigned by the forger: a keyed worker still refuses it
    meta.update(signed=False)
    meta.pop("signature")
    pq.write_table(table.replace_schema_metadata({b"curator.shard_work": json.dumps(meta).encode()}), path)
    with pytest.raises(UntrustedWorkError, match="is not signed .* and this side holds CURATE_JUDGE_EXCHANGE_KEY"):
        read_work(ex, path, "s3cret")


def test_a_keyed_worker_refuses_an_unsigned_work_file_and_states_are_covered_too(tmp_path):
    from tasks.judge.exchange import UntrustedWorkError

    ex, path = _signed_work(tmp_path, secret=None)
    assert read_work(ex, path, None).results_key is None
    with pytest.raises(UntrustedWorkError, match="not signed"):
        read_work(ex, path, "s3cret")
    ex, path = _signed_work(tmp_path / "b")
    # a cached state forged (a judgment marked exhausted, so never asked): changed, refused
    _rewrite(path, lambda t: t.set_column(4, "states", pa.array([[], []], t.schema.field("states").type)))
    with pytest.raises(UntrustedWorkError, match="does not match the digests"):
        read_work(ex, path, "s3cret")


def test_a_work_file_copied_to_another_plans_place_is_refused(tmp_path):
    from tasks.judge.exchange import UntrustedWorkError

    ex, path = _signed_work(tmp_path)
    elsewhere = work_path(ex, "plan2", 0, 2)
    ex.put(elsewhere, ex.get(path))
    with pytest.raises(UntrustedWorkError, match="names plan plan1 shard 0/2 but lies elsewhere"):
        read_work(ex, elsewhere, "s3cret")


def test_the_texts_digest_follows_every_character_and_the_answer_order_not_the_chunking():
    from tasks.judge.exchange_checks import TEXT_COLUMNS, table_digest

    def table(rows, chunks=1):
        t = pa.Table.from_pylist([dict(zip(TEXT_COLUMNS, r)) for r in rows])
        return pa.concat_tables([t.slice(i, 1) for i in range(len(rows))]) if chunks > 1 else t

    rows = [("p1", "[]", "A", "B"), ("p2", "[]", "yes", "no")]
    base = table_digest(table(rows), TEXT_COLUMNS)
    assert table_digest(table(rows, chunks=2), TEXT_COLUMNS) == base
    assert table_digest(table([rows[0], ("p2", "[]", "no", "yes")]), TEXT_COLUMNS) != base  # answers swapped
    assert table_digest(table([("p1", "[]", "AB", ""), rows[1]]), TEXT_COLUMNS) != \
        table_digest(table([("p1", "[]", "A", "B"), rows[1]]), TEXT_COLUMNS)  # where one text ends
    assert table_digest(table([("p1", "[]", "A", None), rows[1]]), TEXT_COLUMNS) != \
        table_digest(table([("p1", "[]", "A", ""), rows[1]]), TEXT_COLUMNS)  # null is not empty
    assert table_digest(table(rows[::-1]), TEXT_COLUMNS) != base


def test_a_keyed_worker_folds_only_earlier_results_signed_for_its_texts(tmp_path):
    ex, path = _signed_work(tmp_path)
    work = read_work(ex, path, "s3cret")
    folder = results_dir(ex, "plan1", "shard-0-of-2")
    ResultWriter(ex, folder, "run-a", work.results_key).write(_rows(("p1", "ab", "ok", 1, 0.5)))
    ResultWriter(ex, folder, "run-b").write(_rows(("p2", "ab", "ok", 1, 0.5)))  # unsigned: a forged 'ok'
    states: dict = {}
    assert fold_results(states, ex, folder, work.results_key) == 2
    assert set(states) == {("p1", "ab", 0)}  # the forged 'ok' is asked again, not skipped
