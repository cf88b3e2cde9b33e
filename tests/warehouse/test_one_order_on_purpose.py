"""Whether a pair judged in one order was judged so on purpose is a fact recorded with its judge run (migration
016), not read from a strategy's name: warehouses made before it keep their meaning, and a strategy the warehouse
has never heard of is read by what it declared."""

from __future__ import annotations

from datetime import datetime

from tasks.curate.bias import MARKDOWN_RE2
from tests.warehouse.older import warehouse_before
from warehouse.store import Warehouse

STRATEGIES = {"run-adaptive": "adaptive:1", "run-adaptive-2": "adaptive:2", "run-swap": "swap",
              "run-single": "single", "run-samples": "samples:2"}


def _old_warehouse(path) -> None:
    """A warehouse as the migrations before 016 left it, with runs of every strategy of that time."""
    con = warehouse_before(path, 16)
    for run_id, strategy in STRATEGIES.items():
        con.execute("INSERT INTO judge_runs (run_id, judge_config_id, strategy, endpoints, shard, started_at, status) "
                    "VALUES (?, 'jc-1', ?, ['http://x/v1'], NULL, ?, 'completed')",
                    [run_id, strategy, datetime(2026, 1, 1)])
    con.close()


def test_an_older_warehouse_is_backfilled_from_its_strategy_labels(warehouse_path):
    _old_warehouse(warehouse_path)
    with Warehouse(warehouse_path) as wh:
        assert wh.schema_version() >= 16
        got = dict(wh.query("SELECT run_id, one_order_on_purpose FROM judge_runs"))
    assert got == {"run-adaptive": True, "run-adaptive-2": True, "run-swap": False, "run-single": False,
                   "run-samples": False}


def test_a_run_records_what_its_strategy_declares(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        with wh.runs.recorded_run("judge", "r1", config_id="jc-1", strategy="adaptive:1", endpoints=["http://x/v1"],
                             shard=None, one_order_on_purpose=True) as run:
            run.summary = {}
        wh.runs.start_judge_run("r2", "jc-1", "swap", ["http://x/v1"], None)  # callers that say nothing: not on purpose
        assert dict(wh.query("SELECT run_id, one_order_on_purpose FROM judge_runs")) == {"r1": True, "r2": False}


def _pair_judged_once(wh: Warehouse, pair_id: str, run_id: str, strategy: str, on_purpose: bool) -> None:
    wh.con.execute(
        "INSERT INTO candidate_pairs (pair_id, source, source_id, source_revision, history, response_a, response_b, "
        "both_bad, est_tokens, prompt_tokens, response_a_tokens, response_b_tokens, ingest_run_id, ingested_at) "
        "VALUES (?, 'helpsteer3', ?, 'r', [{'role': 'user', 'content': 'q'}], 'A', 'B', false, 1, 0, 0, 0, 'run', now())",
        [pair_id, pair_id])
    wh.runs.start_judge_run(run_id, "jc-1", strategy, ["http://x/v1"], None, one_order_on_purpose=on_purpose)
    wh.con.execute(
        "INSERT INTO judgments (pair_id, judge_config_id, \"order\", sample_index, status, score_a, score_b, "
        "ranking_a, margin_a, attempts, judge_run_id, finished_at) VALUES (?, 'jc-1', 'ab', 0, 'ok', 5, 1, 1, 2.5, "
        "1, ?, now())", [pair_id, run_id])


def test_the_curation_reads_the_recorded_fact_not_the_strategy_name(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        _pair_judged_once(wh, "p1", "r1", "adaptive:1", True)
        _pair_judged_once(wh, "p2", "r2", "single", False)
        _pair_judged_once(wh, "p3", "r3", "settle-early:2", True)  # a strategy SQL has never heard of
        _pair_judged_once(wh, "p4", "r4", "adaptive:1", False)  # the name alone decides nothing
        pairs, _ = wh.versions.judged_pool("jc-1", MARKDOWN_RE2)
    got = dict(zip(pairs.column("pair_id").to_pylist(), pairs.column("one_order_on_purpose").to_pylist()))
    assert got == {"p1": True, "p2": False, "p3": True, "p4": False}
