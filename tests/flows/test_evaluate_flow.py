"""`evaluate_judge` on the shared RM-Bench and JudgeBench fixtures against the stand-in: an oracle that
knows the labels scores 100% (but for the one JudgeBench pair whose two answers are identical), and a
known position bias scores what it predicts. Verdicts are SIMULATED; this checks the scoring plumbing."""

from __future__ import annotations

import json
import math

import pytest

from flows.evaluate import evaluate_judge
from schemas.summaries import EvaluationSummary
from tasks.evaluate.benchmarks import comparisons, oracle_rows
from testing.genrm_standin import StandinConfig, StandinProcess
from tests.conftest import read_jsonl, shared_file
from tests.summary_checks import assert_summary
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


def _oracle(tmp_path, benchmark, rows):
    path = tmp_path / f"{benchmark}-oracle.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in oracle_rows(comparisons(benchmark, rows))))
    return str(path)


def test_an_oracle_scores_full_marks_on_rmbench_in_every_cell(tmp_path, warehouse_path):
    fixtures = shared_file("rmbench", "fixtures.jsonl")
    rows = read_jsonl(fixtures)
    by_domain: dict[str, list] = {}
    for r in rows:
        by_domain.setdefault(r["domain"], []).append(r)
    sample = [r for rs in by_domain.values() for r in rs[:10]]
    data = tmp_path / "rm.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in sample))
    config = StandinConfig(latency_mean=0.001, oracle=_oracle(tmp_path, "rm-bench", sample))
    with StandinProcess(config) as server:
        result = evaluate_judge("rm-bench", path=str(data), endpoints=[server.url], warehouse=str(warehouse_path))
        assert server.stats()["requests"] == 2 * 9 * len(sample)
        again = evaluate_judge("rm-bench", path=str(data), endpoints=[server.url], warehouse=str(warehouse_path))
        assert server.stats()["requests"] == 2 * 9 * len(sample)  # cached: a rerun costs nothing
    assert result["accuracy"] == 100.0 and result["failed"] == 0 and result["scored"] == 9 * len(sample)
    assert_summary(result, EvaluationSummary)
    assert_summary(again, EvaluationSummary)
    assert result["by_category"] == {"chat": 100.0, "code": 100.0, "safety": 100.0}
    assert result["by_difficulty"] == {"easy": 100.0, "normal": 100.0, "hard": 100.0}
    assert result["domains_missing"] == ["math"]
    assert set(result["matrix"]) == {"chat", "code", "safety"}
    assert all(v == 100.0 for cells in result["matrix"].values() for v in cells.values())
    assert all("SIMULATED" in m for m in result["served_models"])
    assert again["accuracy"] == 100.0 and again["judge"]["requests"] == 0
    with Warehouse(warehouse_path, read_only=True) as wh:
        assert wh.query("SELECT benchmark, accuracy, scored FROM judge_evaluations ORDER BY created_at") == [
            ("rm-bench", 100.0, 9 * len(sample))] * 2
        assert wh.query("SELECT count(*) FROM judgments") == [(0,)]  # kept out of the curation tables


def _judgebench(tmp_path):
    fixtures = shared_file("judgebench", "fixtures.jsonl")
    rows = read_jsonl(fixtures)
    identical = sum(r["response_A"] == r["response_B"] for r in rows)
    return fixtures, rows, identical


def test_an_oracle_scores_full_marks_on_judgebench_but_identical_answers(tmp_path, warehouse_path):
    fixtures, rows, identical = _judgebench(tmp_path)
    with StandinProcess(StandinConfig(latency_mean=0.001, oracle=_oracle(tmp_path, "judgebench", rows))) as server:
        result = evaluate_judge("judgebench", path=str(fixtures), endpoints=[server.url], warehouse=str(warehouse_path))
    n = len(rows)
    assert result["scored"] == n and result["failed"] == 0
    assert result["outcomes"].get("correct") == n - identical
    assert result["accuracy"] == round(100.0 * (n - identical) / n, 2)
    assert set(result["by_category"]) == {"knowledge", "reasoning", "math", "coding"}
    assert all(v == 100.0 for k, v in result["by_category"].items() if k != "coding")
    assert result["model_card"]["overall"] == 87.4


@pytest.mark.parametrize("strategy", ["swap", "single"])
def test_a_known_position_bias_scores_what_it_predicts(tmp_path, warehouse_path, strategy):
    fixtures, rows, identical = _judgebench(tmp_path)
    p = 0.3  # share of verdicts that go to the first-shown answer, whatever the labels say
    config = StandinConfig(latency_mean=0.001, first_wins_rate=p, oracle=_oracle(tmp_path, "judgebench", rows))
    with StandinProcess(config) as server:
        result = evaluate_judge("judgebench", path=str(fixtures), endpoints=[server.url], strategy=strategy,
                                warehouse=str(warehouse_path))
    distinct = [r for r in rows if r["response_A"] != r["response_B"]]
    share_a = sum(r["label"] == "A>B" for r in distinct) / len(rows)
    share_b = sum(r["label"] == "B>A" for r in distinct) / len(rows)
    if strategy == "swap":  # the order showing the winner second must escape the bias: 1 - p
        predicted = (share_a + share_b) * (1 - p)
    else:  # one order: right whenever the winner is shown first, else with 1 - p
        predicted = share_a + share_b * (1 - p)
    sd = math.sqrt(p * (1 - p) / len(rows))
    assert abs(result["accuracy"] / 100 - predicted) <= 4 * sd, (result["accuracy"], predicted)
    if strategy == "swap":
        assert result["outcomes"].get("inconsistent", 0) > 0.15 * len(rows)
