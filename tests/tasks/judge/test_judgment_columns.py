"""A judgment's columns are declared once: the schema, the table a batch of results makes and the warehouse's
tables cannot drift apart."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa

from tasks.judge.client import JudgeRequest, JudgeResult
from tasks.judge.genrm import Verdict, to_a_side
from tasks.judge.run import JUDGMENT_COLUMNS, JUDGMENT_SCHEMA, results_table
from warehouse.store import Warehouse

FINISHED = datetime(2026, 3, 4, 5, 6, 7, 891011)


def _ok() -> JudgeResult:
    verdict = Verdict(2, 5, 6)
    request = JudgeRequest("p1", "ba", 3, [], prior_attempts=2, prior_requests=5, attempts=1, requests=4)
    return JudgeResult(request, "ok", verdict=verdict, side=to_a_side(verdict, "ba"), raw_text="{...}",
                       reasoning="because", finish_reason="stop", tokens_in=1234, tokens_out=567, latency_s=8.25,
                       endpoint="http://e1/v1", served_model="genrm", finished_at=FINISHED)


def _failed() -> JudgeResult:
    return JudgeResult(JudgeRequest("p2", "ab", 0, [], requests=2), "failed", failure_reason="no_json",
                       error="no JSON object", raw_text="words", finished_at=FINISHED)


def test_a_batch_table_carries_every_field_of_each_result_under_its_own_column():
    table = results_table([_ok(), _failed()], "jc1", "run1")
    assert table.schema == JUDGMENT_SCHEMA
    ok, failed = table.to_pylist()
    assert ok == {
        "pair_id": "p1", "judge_config_id": "jc1", "order": "ba", "sample_index": 3, "status": "ok",
        "score_1": 2, "score_2": 5, "ranking": 6, "score_a": 5, "score_b": 2, "ranking_a": 1, "margin_a": 2.5,
        "failure_reason": None, "error": None, "raw_text": "{...}", "reasoning": "because", "finish_reason": "stop",
        "tokens_in": 1234, "tokens_out": 567, "latency_s": 8.25, "attempts": 3, "requests": 9,
        "endpoint": "http://e1/v1", "served_model": "genrm", "judge_run_id": "run1", "finished_at": FINISHED,
    }
    assert failed == {**{name: None for name in JUDGMENT_SCHEMA.names}, "pair_id": "p2", "judge_config_id": "jc1",
                      "order": "ab", "sample_index": 0, "status": "failed", "failure_reason": "no_json",
                      "error": "no JSON object", "raw_text": "words", "tokens_in": 0, "tokens_out": 0,
                      "latency_s": 0.0, "attempts": 0, "requests": 2, "judge_run_id": "run1",
                      "finished_at": FINISHED}


def test_the_schema_is_the_declaration_and_an_empty_batch_keeps_it():
    assert [(f.name, f.type) for f in JUDGMENT_SCHEMA] == [(c.name, c.type) for c in JUDGMENT_COLUMNS]
    assert len({c.name for c in JUDGMENT_COLUMNS}) == len(JUDGMENT_COLUMNS)
    assert results_table([], "jc", "r").schema == JUDGMENT_SCHEMA


def test_the_warehouse_tables_hold_every_declared_column_with_its_type(warehouse_path):
    ours = {pa.string(): "VARCHAR", pa.int32(): "INTEGER", pa.float64(): "DOUBLE", pa.timestamp("us"): "TIMESTAMP"}
    with Warehouse(warehouse_path) as wh:
        for table in ("judgments", "eval_judgments"):
            columns = dict(wh.query(f"SELECT column_name, data_type FROM information_schema.columns "
                                    f"WHERE table_name = '{table}'"))
            assert {c.name: ours[c.type] for c in JUDGMENT_COLUMNS}.items() <= columns.items(), table
        # and a batch table lands as it is, row for row
        wh.judging.write_judgments(results_table([_ok(), _failed()], "jc1", "run1"))
        assert wh.query("SELECT pair_id, ranking_a, margin_a, attempts, requests FROM judgments ORDER BY pair_id") \
            == [("p1", 1, 2.5, 3, 9), ("p2", None, None, 0, 2)]
