"""The dashboard's certified-agreement panel through Streamlit's test harness, over a warehouse with a certified
version: the card's first paragraph word for word, the figures of its certification table, the risk-coverage
curve's points, and the review queue `--select uncertified` would send, all read from `stats.certification`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from common.numbers import count, percent
from tests.curator.dashboard.browser import Browser, chromium, served_dashboard
from tests.curator.dashboard.test_app import APP, _chart_rows, _title
from tests.flows.conftest import ingest_clean_pairs
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture(scope="module")
def certified_snapshot(tmp_path_factory):
    from flows.judge import judge
    from flows.versions import build_version
    from testing.genrm_standin import StandinConfig, StandinProcess
    from warehouse.snapshot import refresh_snapshot

    folder = tmp_path_factory.mktemp("dash-certified")
    warehouse = folder / "warehouse.duckdb"
    ingest_clean_pairs(folder, warehouse, 1000, seed=41)
    with StandinProcess(StandinConfig(latency_mean=0.002, capacity=128)) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(warehouse))
    # "broad" is listed first (by name), "sure" made last: the page opens on "sure"
    build_version("broad", warehouse=str(warehouse))
    build_version("sure", policy_overrides={"target_agreement": 0.95}, warehouse=str(warehouse))
    snapshot = folder / "dashboard.duckdb"
    refresh_snapshot(warehouse, snapshot, "manual", {"server_tokens_per_second": 2500, "gpus_per_server": 8})
    return warehouse, snapshot


def _card(warehouse: Path, name: str, version: int) -> str:
    from tasks.publish.card import card_markdown

    with Warehouse(warehouse, read_only=True) as wh:
        meta = wh.versions.version_meta(name, version)
        rows = wh.versions.version_rows(name, version)
        judge_config = wh.judging.judge_config(meta["judge_config_id"])
    return card_markdown(name=name, version=version, content_hash=meta["content_hash"], rows=rows,
                         stats=meta["stats"], policy=meta["policy"], judge_config=judge_config,
                         source_revisions=meta["source_revisions"], licenses=[], configs={"dpo": ["train"]},
                         plot_file="plot.svg", simulated=bool(meta["simulated"]))


def _page(monkeypatch, snapshot: Path, label: str) -> AppTest:
    monkeypatch.setenv("CURATE_DASHBOARD_SNAPSHOT", str(snapshot))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.sidebar.selectbox(key="version").select(label).run()
    assert not at.exception, at.exception
    return at


def _charts(at: AppTest) -> dict[str, list[dict]]:
    """The rows of the charts drawn from one dataset, by title (the reliability diagram layers two: left out)."""
    return {_title(json.loads(c.proto.spec)): _chart_rows(c) for c in at.get("vega_lite_chart")
            if len({d.data.data for d in c.proto.datasets}) == 1}


def _table(at: AppTest, column: str):
    return next(t.value for t in at.table if column in t.value.columns)


def test_the_panel_says_what_the_card_says_from_the_same_figures(certified_snapshot, monkeypatch):
    warehouse, snapshot = certified_snapshot
    at = _page(monkeypatch, snapshot, "sure v1")
    with Warehouse(warehouse, read_only=True) as wh:
        cert = wh.versions.version_meta("sure", 1)["stats"]["certification"]
    card = _card(warehouse, "sure", 1)
    body = [p for p in card.split("\n---\n", 1)[1].split("\n\n") if p.strip()]
    guarantee = next(p for p in body if p.startswith("**At least"))
    assert guarantee in [m.value for m in at.markdown]  # the card's first words, character for character
    assert "Certified agreement" in [h.value for h in at.header]

    # the figures are the card's cells
    figures = dict(_table(at, "figure").itertuples(index=False))
    section = card.split("## Certified agreement", 1)[1].split("\n## ", 1)[0]

    def cell(name: str) -> str:
        return re.search(rf"\| {re.escape(name)}[^|]* \| ([^|]+) \|", section).group(1).strip()

    said = "estimated agreement of the accepted held-out pairs (an estimate, not a bound)"
    assert figures[said] == cell(said)
    assert figures["pairs certified / judged (coverage)"] == cell("pairs certified / judged (coverage)")
    # the threshold is text, as the card's cell reads: escaped, where st.table would take `>= 0.9` for a quote block
    assert figures["threshold"] == "\\" + cell("threshold") and cell("threshold").startswith(">= ")
    assert figures["target agreement"] == percent(cert["target_agreement"]) == "95.0%"
    assert figures["confidence (1 - risk)"] == "95% (risk 0.05)"
    assert figures["held-out labelled pairs"] == f"{count(cert['calibration_pairs'])}, from the sources' clear labels"
    assert figures["bound"] == cert["bound"]
    listed = _table(at, "uncertified, not yet reviewed")
    (row,) = listed[listed["dataset"] == "sure"].to_dict("records")
    assert (row["estimated agreement"], row["coverage"], row["labels"], row["pairs not covered"],
            row["kept, not covered"]) == (percent(cert["estimated_agreement"]), percent(cert["coverage"]), "source",
                                          "0", "0")

    # the curve's points are every threshold tried
    points = _charts(at)["risk-coverage curve, sure v1"]
    drawn = sorted((p["coverage"], p["certified_agreement"]) for p in points if "coverage" in p)
    assert drawn == sorted((p["coverage"], p["agreement_bound"]) for p in cert["curve"]) and len(drawn) >= 2


def test_the_review_queue_is_what_a_push_of_uncertified_pairs_sends(certified_snapshot, monkeypatch):
    from tasks.review.select import ranked
    from tasks.review.sync import version_candidates

    warehouse, snapshot = certified_snapshot
    at = _page(monkeypatch, snapshot, "sure v1")
    with Warehouse(warehouse, read_only=True) as wh:
        candidates, _ = version_candidates(wh, "sure", 1, "uncertified")
        cert = wh.versions.version_meta("sure", 1)["stats"]["certification"]
    order = ranked(candidates, "uncertified")
    queue = cert["uncertified"]
    assert queue["pairs"] == queue["not_reviewed"] == len(order) > 10  # nothing reviewed yet
    shown = _table(at, "pair id")
    assert list(shown["pair id"]) == candidates.pair_id[order[:10]].tolist() == [q["pair_id"] for q in queue["nearest"]]
    scores = [float(s) for s in shown["score"]]
    assert scores == sorted(scores, reverse=True) and all(s < cert["threshold"] for s in scores)
    said = " ".join(c.value for c in at.caption)
    assert f"{count(len(order))} pairs the certification could have accepted but did not" in said
    assert "curate review push sure --select uncertified" in said


def test_the_page_opens_on_the_version_made_last_not_the_first_by_name(certified_snapshot, monkeypatch):
    _, snapshot = certified_snapshot
    monkeypatch.setenv("CURATE_DASHBOARD_SNAPSHOT", str(snapshot))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    box = at.sidebar.selectbox(key="version")
    assert box.options == ["broad v1", "sure v1"] and box.value == "sure v1"
    assert [m for m in at.markdown if m.value.startswith("**At least")]  # its guarantee shown at once


def test_a_version_without_a_target_shows_no_certification_of_its_own(certified_snapshot, monkeypatch):
    _, snapshot = certified_snapshot
    at = _page(monkeypatch, snapshot, "broad v1")
    said = " ".join(c.value for c in at.caption)
    assert "broad v1 was built without a target agreement" in said
    assert not [m for m in at.markdown if m.value.startswith("**At least")]
    assert "risk-coverage curve, broad v1" not in _charts(at)


def test_the_panel_renders_in_a_browser_with_its_curve_and_queue(certified_snapshot, tmp_path):
    """`curate dashboard` in headless Chromium, the certified version selected as the page opens (the one made last):
    the card's guarantee as text, the risk-coverage curve drawn (Vega's SVG, its title and axes as text) and the
    review queue's first pair ids."""
    binary = chromium()
    if binary is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium); .ci/run installs it")
    warehouse, snapshot = certified_snapshot
    with Warehouse(warehouse, read_only=True) as wh:
        cert = wh.versions.version_meta("sure", 1)["stats"]["certification"]
    guarantee = next(p for p in _card(warehouse, "sure", 1).split("\n\n") if p.startswith("**At least"))
    with served_dashboard(warehouse, tmp_path / "dashboard.log", CURATE_DASHBOARD_SNAPSHOT=str(snapshot)) as url:
        browser = Browser(binary)
        try:
            text = browser.open(url, ready_text="Uncertified pairs: the review queue")
            charts = browser.evaluate("Array.from(document.querySelectorAll('.vega-embed')).map(e => "
                                      "Array.from(e.querySelectorAll('svg.marks text')).map(t => t.textContent))")
        finally:
            browser.close()
    assert "Traceback" not in text and "Certified agreement" in text
    assert guarantee.replace("**", "") in text  # the card's first paragraph, as rendered (bold is not text)
    curve = next(c for c in charts if "risk-coverage curve, sure v1" in c)
    assert "coverage" in " ".join(curve).lower()
    assert all(q["pair_id"][:12] in text for q in cert["uncertified"]["nearest"][:3])
