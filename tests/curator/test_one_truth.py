"""One truth, said once: a version's figures (pairs judged, pairs kept, the judged pool, agreement with human labels
with ties and both-bad apart) read the same on its card, the dashboard, `curate status` and the JSON outputs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from common.numbers import count, percent, rate
from curator.cli import app
from warehouse.snapshot import refresh_snapshot

pytestmark = pytest.mark.prefect
runner = CliRunner()
APP = str(Path(__file__).resolve().parents[2] / "curator" / "dashboard" / "app.py")


def test_a_versions_figures_agree_on_every_surface(dashboard_warehouse, tmp_path, monkeypatch):
    source, _, _ = dashboard_warehouse
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(source, warehouse)
    built = runner.invoke(app, ["build-version", "truth", "--min-abs-margin", "0.5", "--allow-order-disagreement",
                                "--json", "--warehouse", str(warehouse)])
    assert built.exit_code == 0, built.output
    summary = json.loads(built.stdout.strip().splitlines()[-1])
    stats, version = summary["stats"], summary["version"]
    judged, kept = stats["pairs_judged"], stats["pairs_kept"]
    pool, agreement = stats["human_agreement"]["pool"], stats["human_agreement"]["kept"]
    assert kept == summary["rows"] and judged == kept + sum(stats["dropped"].values())
    # the bias audit's pool is the same judged pool: its pairs with a chosen side and the judge ties make it up
    assert stats["bias"]["pool"]["pairs"] <= judged and stats["bias"]["kept"]["pairs"] == kept
    assert agreement["comparable"] == agreement["agree"] + agreement["disagree"]
    assert agreement["comparable"] + agreement["human_ties"] + agreement["both_bad"] + agreement["judge_ties"] == \
        agreement["labelled"]

    # the card
    published = runner.invoke(app, ["publish", "truth", "--to", str(tmp_path / "published"), "--json", "--warehouse",
                                     str(warehouse)])
    assert published.exit_code == 0, published.output
    card = (Path(json.loads(published.stdout.strip().splitlines()[-1])["target"]) / "README.md").read_text()
    assert f"{count(kept)} pairs kept of {count(judged)} pairs judged" in card
    assert f"| agreement | {percent(pool['rate'])} | {percent(agreement['rate'])} |" in card
    assert f"| human ties (not counted) | {count(pool['human_ties'])} | {count(agreement['human_ties'])} |" in card
    assert f"| pairs judged / kept | {count(judged)} | {count(kept)} |" in card
    spent = stats["cost"]["gpu_seconds"]  # GPU-seconds measured by the judge runs, the same on every surface
    assert spent > 0 and f"Measured: {rate(spent)} GPU-seconds (genrm {rate(spent)})" in card

    # curate status, as JSON and as a table
    status = json.loads(runner.invoke(app, ["status", "--json", "--warehouse", str(warehouse)]).stdout)
    figures = next(v["figures"] for v in status["versions"] if v["name"] == "truth")
    assert figures["pairs_judged"] == judged and figures["pairs_kept"] == kept
    assert figures["human_agreement"] == stats["human_agreement"]
    assert figures["gpu_seconds"] == {"whole": spent, "by_judge": stats["cost"]["gpu_seconds_by_judge"],
                                      "per_kept_pair": stats["cost"]["gpu_seconds_per_kept_pair"]}
    table = runner.invoke(app, ["status", "--warehouse", str(warehouse)]).output
    row = next(line for line in table.splitlines() if line.startswith("truth "))
    assert re.search(rf"\b{count(judged)}\s+{count(kept)}\s+{re.escape(percent(agreement['rate']))} of "
                     rf"{count(agreement['comparable'])}\b", row), row
    assert "GPU-seconds measured" in table and f"genrm {rate(spent)}" in table
    assert json.loads(runner.invoke(app, ["versions", "truth", "--json", "--warehouse", str(warehouse)]).stdout)[0][
        "figures"] == figures

    # build-version's own lines: the same words, and no numpy repr anywhere
    again = runner.invoke(app, ["build-version", "truth", "--min-abs-margin", "1.5", "--warehouse", str(warehouse)])
    assert again.exit_code == 0 and "np." not in again.output and "pairs judged" in again.output, again.output

    # the dashboard, over a snapshot of the same warehouse, with this version selected
    snapshot = tmp_path / "dashboard.duckdb"
    refresh_snapshot(warehouse, snapshot, "manual", {"server_tokens_per_second": 2500, "gpus_per_server": 8})
    monkeypatch.setenv("CURATE_DASHBOARD_SNAPSHOT", str(snapshot))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.sidebar.selectbox(key="version").select(f"truth v{version}").run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Pairs judged"] == count(judged) and metrics["Pairs kept"] == count(kept)
    assert metrics["Judge-human agreement (SIMULATED)"] == percent(agreement["rate"])
    assert metrics["Agreement, judged pool"] == percent(pool["rate"])
    assert metrics["GPU-seconds (measured)"] == rate(spent)
    versions = next(t.value for t in at.table if "pairs judged" in t.value.columns)
    mine = versions[(versions["dataset"] == "truth") & (versions["version"] == str(version))].iloc[0]
    assert (mine["pairs judged"], mine["pairs kept"], mine["agreement"]) == (count(judged), count(kept),
                                                                            percent(agreement["rate"]))
