"""Calibrated p_correct and the bias audit end to end: synthetic rows whose human labels follow a latent
quality, judged over HTTP by a stand-in whose verdicts follow the same quality with noise, a position bias
and a strong length bias; versions built with the default policy, `max_chosen_longer_share` and
`min_p_correct`, and the card that shows them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from curator.cli import app
from flows.ingest import ingest
from flows.judge import judge
from flows.publish import publish
from flows.versions import build_version
from tasks.ingest.latent import latent_direction
from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
    path = tmp_path_factory.mktemp("calibration") / "warehouse.duckdb"
    data = path.parent / "hs.jsonl"
    write_synth(data, "helpsteer3", 1_500, seed=41, pair_bytes=600, bad_rate=0.0)
    ingest("helpsteer3", path=str(data), warehouse=str(path))
    with StandinProcess(StandinConfig(latency_mean=0.002, capacity=128, position_bias=0.3, length_bias=3.0)) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(path))
    return path


def test_default_version_reports_calibration_and_the_length_bias(biased):
    v = build_version("cal", warehouse=str(biased))
    calibration, bias = v["stats"]["calibration"], v["stats"]["bias"]
    assert calibration["status"] == "fitted" and calibration["labelled"] >= 500
    assert 0.0 <= calibration["ece"] <= 0.08 and 0.0 < calibration["brier"] < 0.25  # ~900 labels: a noisy ECE
    assert sum(b["count"] for b in calibration["bins"]) == calibration["labelled"]
    assert all(d["labelled"] > 0 for d in calibration["by_domain"].values())
    # The stand-in prefers the longer answer: the judged pool and the default version both lean that way.
    assert bias["pool"]["chosen_longer_share"] > 0.58 and bias["kept"]["chosen_longer_share"] > 0.58
    assert bias["kept"]["pairs"] == v["rows"] and bias["pool"]["pairs"] >= v["rows"]
    with Warehouse(biased, read_only=True) as wh:
        rows = wh.versions.version_rows("cal", v["version"])
    assert all(r["p_correct"] is not None and 0.0 <= r["p_correct"] <= 1.0 for r in rows)
    assert all(r["confidence"] is not None for r in rows)  # the heuristic stays beside it


def test_max_chosen_longer_share_holds_by_dropping_the_least_confident_longer_pairs(biased):
    free = build_version("cal-free", warehouse=str(biased))
    held = build_version("cal-held", policy_overrides={"max_chosen_longer_share": 0.55}, warehouse=str(biased))
    kept = held["stats"]["bias"]["kept"]
    assert kept["chosen_longer_share"] <= 0.55
    dropped = held["stats"]["dropped"]["chosen_longer_share"]
    assert dropped > 0 and held["rows"] == free["rows"] - dropped
    with Warehouse(biased, read_only=True) as wh:
        before = {r["pair_id"]: r for r in wh.versions.version_rows("cal-free", 1)}
        after = {r["pair_id"] for r in wh.versions.version_rows("cal-held", 1)}
    gone = [r for pid, r in before.items() if pid not in after]
    stayed_longer = [r for pid, r in before.items() if pid in after and len(r["chosen"]) > len(r["rejected"])]
    assert all(len(r["chosen"]) > len(r["rejected"]) for r in gone)  # only the over-represented side lost pairs
    assert max(r["p_correct"] for r in gone) <= min(r["p_correct"] for r in stayed_longer)


def test_min_p_correct_09_keeps_pairs_that_agree_with_the_latent_truth(biased):
    v = build_version("cal-sure", policy_overrides={"min_p_correct": 0.9}, warehouse=str(biased))
    assert v["stats"]["dropped"]["p_correct_below_min"] > 0
    with Warehouse(biased, read_only=True) as wh:
        rows = wh.versions.version_rows("cal-sure", v["version"])
    assert len(rows) >= 200 and min(r["p_correct"] for r in rows) >= 0.9
    right = sum(latent_direction(r["chosen"], r["rejected"]) == "a" for r in rows)
    assert right / len(rows) >= 0.9


def test_card_and_json_show_the_reliability_diagram_ece_brier_and_bias_table(biased, tmp_path):
    build_version("cal-card", warehouse=str(biased))
    published = publish("cal-card", to=str(tmp_path / "pub"), warehouse=str(biased))
    folder = tmp_path / "pub" / "cal-card" / published["target"].rsplit("/", 1)[1]
    card = (folder / "README.md").read_text()
    assert "![reliability diagram](reliability.svg)" in card and "| all |" in card and "ECE" in card
    assert "chosen answer is the longer" in card and "judged pool (before the filter)" in card
    svg = (folder / "reliability.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<circle") >= 2
    result = CliRunner().invoke(app, ["build-version", "cal-card", "--warehouse", str(biased), "--json",
                                      "--max-chosen-longer-share", "0.6"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout.strip().splitlines()[-1])["stats"]
    assert {"ece", "brier", "bins", "by_domain"} <= set(stats["calibration"])
    assert {"pool", "kept"} == set(stats["bias"])


def test_dashboard_shows_each_versions_calibration_and_reliability(biased, tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from common.numbers import percent
    from warehouse.snapshot import refresh_snapshot

    v = build_version("cal-dash", warehouse=str(biased))
    snapshot = tmp_path / "snap.duckdb"
    refresh_snapshot(biased, snapshot, "test", {"server_tokens_per_second": 1000.0, "gpus_per_server": 8})
    monkeypatch.setenv("CURATE_DASHBOARD_SNAPSHOT", str(snapshot))
    app = str(Path(__file__).resolve().parents[2] / "curator" / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=60)
    at.session_state["version"] = f"cal-dash v{v['version']}"
    at.run()
    assert not at.exception, at.exception
    quality = next(t.value for t in at.table if "chosen longer (pool → version)" in t.value.columns)
    row = quality[quality["dataset"] == "cal-dash"].iloc[0]
    calibration, bias = v["stats"]["calibration"], v["stats"]["bias"]
    assert row["calibration"] == "fitted" and row["ECE"] == f"{calibration['ece']:.3f}"
    assert row["chosen longer (pool → version)"] == \
        f"{percent(bias['pool']['chosen_longer_share'])} → {percent(bias['kept']['chosen_longer_share'])}"
    titles = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert any("reliability of p_correct, cal-dash" in str(spec) for spec in titles)
