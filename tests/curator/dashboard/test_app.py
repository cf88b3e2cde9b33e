"""The dashboard through Streamlit's own test harness: real numbers from a test warehouse's snapshot,
filters, and a clear message without a snapshot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from common.numbers import count
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

APP = str(Path(__file__).resolve().parents[3] / "curator" / "dashboard" / "app.py")


def _run(monkeypatch, snapshot) -> AppTest:
    monkeypatch.setenv("CURATE_DASHBOARD_SNAPSHOT", str(snapshot))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def _chart_rows(chart) -> list[dict]:
    """The rows a Vega-Lite chart element draws (Streamlit ships them as Arrow IPC)."""
    (dataset,) = {d.data.data: d for d in chart.proto.datasets}.values()  # layers share one dataset
    return pa.ipc.open_stream(dataset.data.data).read_all().to_pylist()


def _title(spec: dict) -> str:
    title = spec.get("title") or next((layer.get("title") for layer in spec.get("layer", []) if layer.get("title")), "")
    return title["text"] if isinstance(title, dict) else title


def _charts(at: AppTest) -> dict[str, list[dict]]:
    return {_title(json.loads(c.proto.spec)): _chart_rows(c) for c in at.get("vega_lite_chart")}


def test_metrics_tables_and_charts_show_the_warehouse_numbers(dashboard_warehouse, monkeypatch):
    warehouse, snapshot, summary = dashboard_warehouse
    at = _run(monkeypatch, snapshot)
    with Warehouse(warehouse, read_only=True) as wh:
        judged = wh.query("SELECT count(DISTINCT pair_id) FROM judgments j JOIN pairs_for_curation USING (pair_id) "
                          "WHERE j.status = 'ok'")[0][0]
        margins = dict(wh.query("SELECT floor(abs(m) * 2) / 2, count(*) FROM (SELECT pair_id, avg(margin_a) AS m "
                                "FROM judgments JOIN pairs_for_curation USING (pair_id) WHERE status = 'ok' GROUP BY 1) GROUP BY 1"))
        failures = dict(wh.query("SELECT failure_reason, count(*) FROM judgments WHERE status = 'failed' GROUP BY 1"))
    metrics = {m.label: m.value for m in at.metric}
    read = sum(s["read"] for s in summary["ingest"].values())
    assert metrics["Pairs read"] == count(read) and metrics["Pairs judged"] == count(judged)
    assert metrics["GPU-hours / 1,000 kept"] != "n/a"  # the newest version is selected first

    charts = _charts(at)
    funnel = charts["read → valid → unique → for curation → judged → kept"]
    for source, s in summary["ingest"].items():
        got = {r["stage"]: r["pairs"] for r in funnel if r["source"] == source}
        assert got["read"] == s["read"] and got["valid"] == s["valid"] and got["kept"] > 0
    assert {r["abs_margin_bin"]: r["pairs"] for r in charts["|mean margin| of judged pairs"]} == margins
    assert {r["failure_reason"]: r["judgments"] for r in charts["failed judgments"]} == failures
    assert count(sum(r["pairs"] for r in charts["confidence of kept pairs in dash v2"])) == \
        next(r["pairs kept"] for t in at.table if "content hash" in t.value.columns
             for r in t.value.to_dict("records") if r["version"] == "2")
    headers = [h.value for h in at.header]
    assert headers[:2] == ["Yield funnel per source", "Judge-human agreement by source and domain"]
    # 250 synthetic rows carry too few clear human labels for a calibration: the page says so, per version.
    assert "Calibration and bias, per version" in headers
    quality = next(t.value for t in at.table if "chosen longer (pool → version)" in t.value.columns)
    assert set(quality["calibration"]) == {"too_few_labelled"} and len(quality) == 2
    assert all(re.fullmatch(r"\d+\.\d% → \d+\.\d%", v) for v in quality["chosen longer (pool → version)"])
    assert any("no calibrated p_correct" in c.value for c in at.caption)
    families = next(t.value for t in at.table if "win rate" in t.value.columns)
    assert set(families["stage"]) == {"pool", "kept"}
    assert all(re.fullmatch(r"\d+\.\d%", v) for v in families["win rate"])  # 53.9%, not 0.539


def test_every_number_reads_the_same_way(dashboard_warehouse, monkeypatch):
    """Counts are whole numbers with thousands separated, shares percentages with one decimal, rates without an
    exponent, and no table shows a raw fraction or a float count."""
    _, snapshot, _ = dashboard_warehouse
    at = _run(monkeypatch, snapshot)
    percent_columns = ("agreement", "win rate", "accuracy", "model card", "(pool → version)")
    count_columns = ("read", "valid", "quarantined", "judged", "kept", "pairs", "rows", "judgments", "tokens in",
                     "tokens out", "requests", "pairs judged", "pairs kept", "labelled", "wins", "agree", "comparable")
    # measures (seconds, rates, GPU-hours, ECE) read with their decimals, so a run of 2.0 s is "2.0"; anything else
    # with only zeros after the point would be a float count
    measure_columns = ("seconds", "judgments/s", "tokens/s", "GPU-hours", "GPU-hours / 1,000 kept",
                       "GPU-seconds (measured)", "GPU-seconds / kept pair", "ECE", "Brier", "mean p_correct")
    for table in at.table:
        for column in table.value.columns:
            for value in table.value[column]:
                assert "e+" not in value, (column, value)
                if column in measure_columns:
                    assert value in ("-", "–") or re.fullmatch(r"-?\d{1,3}(,\d{3})*(\.\d+)?", value), (column, value)
                else:
                    assert not re.fullmatch(r"\d+\.0+", value), (column, value)
                if column.endswith(percent_columns) and value != "–":
                    assert re.fullmatch(r"(\d+\.\d% → )?\d+\.\d%", value), (column, value)
                if column in count_columns and value != "–":
                    assert re.fullmatch(r"\d{1,3}(,\d{3})*", value), (column, value)
    for metric in at.metric:
        assert metric.value == "n/a" or re.fullmatch(r"\d{1,3}(,\d{3})*|\d+\.\d%|\d[\d,]*\.\d+", metric.value)


def test_an_empty_panel_says_which_command_fills_it(monkeypatch, tmp_path):
    from warehouse.snapshot import refresh_snapshot

    Warehouse(tmp_path / "w.duckdb").close()
    refresh_snapshot(tmp_path / "w.duckdb", tmp_path / "dashboard.duckdb", "manual",
                     {"server_tokens_per_second": 2500, "gpus_per_server": 8})
    at = _run(monkeypatch, tmp_path / "dashboard.duckdb")
    hints = " ".join(i.value for i in at.info)
    for command in ("curate ingest", "curate judge", "curate build-version", "curate evaluate-judge", "curate run"):
        assert command in hints, hints
    assert not at.table  # no empty table is drawn where a hint can say more


def test_filters_narrow_every_view(dashboard_warehouse, monkeypatch):
    _, snapshot, summary = dashboard_warehouse
    at = _run(monkeypatch, snapshot)
    at.sidebar.multiselect(key="sources").select("arena").run()
    assert not at.exception
    assert set(at.table[0].value["source"]) == {"arena"}
    assert at.metric[0].value == count(summary["ingest"]["arena"]["read"])
    at.sidebar.selectbox(key="version").select("dash v1").run()
    charts = _charts(at)
    assert "confidence of kept pairs in dash v1" in charts
    assert all(r["source"] == "arena" for r in charts["read → valid → unique → for curation → judged → kept"])


def test_without_a_snapshot_it_says_what_to_run(monkeypatch, tmp_path):
    at = _run(monkeypatch, tmp_path / "none.duckdb")
    assert "curate snapshot" in at.error[0].value
