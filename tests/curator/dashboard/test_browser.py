"""`curate dashboard` rendered in headless Chromium: the page shows the test warehouse's numbers in its
metrics, tables and charts (Vega draws SVG, so bar labels are text)."""

from __future__ import annotations

import re

import pytest

from tests.curator.dashboard.browser import Browser, chromium, served_dashboard
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture
def dashboard_url(dashboard_warehouse, tmp_path):
    warehouse, _, _ = dashboard_warehouse
    with served_dashboard(warehouse, tmp_path / "dashboard.log") as url:
        yield url


def _card(warehouse, name: str, version: int) -> str:
    """The dataset card of a version, as `curate publish` writes it."""
    from tasks.publish.card import card_markdown

    with Warehouse(warehouse, read_only=True) as wh:
        meta = wh.versions.version_meta(name, version)
        rows = wh.versions.version_rows(name, version)
        judge_config = wh.judging.judge_config(meta["judge_config_id"])
    return card_markdown(name=name, version=version, content_hash=meta["content_hash"], rows=rows,
                         stats=meta["stats"], policy=meta["policy"], judge_config=judge_config,
                         source_revisions=meta["source_revisions"], licenses=[], configs={"dpo": ["train"]},
                         plot_file="plot.svg", simulated=bool(meta["simulated"]))


def test_the_page_renders_the_warehouse_numbers(dashboard_warehouse, dashboard_url, tmp_path):
    binary = chromium()
    if binary is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium); .ci/run installs it")
    warehouse, _, summary = dashboard_warehouse
    with Warehouse(warehouse, read_only=True) as wh:
        margins = wh.query("SELECT floor(abs(m) * 2) / 2, count(*) FROM (SELECT pair_id, avg(margin_a) AS m FROM "
                           "judgments JOIN pairs_for_curation USING (pair_id) WHERE status = 'ok' GROUP BY 1) GROUP BY 1")
        failures = wh.query("SELECT failure_reason, count(*) FROM judgments WHERE status = 'failed' GROUP BY 1")
        evaluation = wh.query("SELECT accuracy FROM judge_evaluations")[0][0]
        # distinct rows read: every recorded sighting and every quarantined row, once however often re-read
        read = wh.query("SELECT (SELECT count(*) FROM pair_sightings) + (SELECT count(*) FROM quarantine)")[0][0]
    card = _card(warehouse, "dash", 2)  # the version the page selects first: the newest
    browser = Browser(binary)
    try:
        text = browser.open(dashboard_url, ready_text="Judge quality checks")
        charts = browser.evaluate("Array.from(document.querySelectorAll('.vega-embed')).map(e => "
                                  "Array.from(e.querySelectorAll('svg.marks text')).map(t => t.textContent))")
        # every table fits the page: nothing cut off on the right
        overflow = browser.evaluate("Array.from(document.querySelectorAll('[data-testid=stTable]')).map(e => "
                                    "[e.scrollWidth, e.clientWidth])")
        browser.screenshot(str(tmp_path / "dashboard.png"))
    finally:
        browser.close()
    assert "Traceback" not in text and "Error" not in text
    assert f"Pairs read\n\n{read:,}" in text
    # the stand-in judged this warehouse: a banner says so before anything else is read
    assert "SIMULATED verdicts." in text and text.index("SIMULATED verdicts.") < text.index("Pairs read")
    assert "Judge-human agreement (SIMULATED)" in text
    # the version's figures and percentages are the card's, character for character
    kept, judged = re.search(r"([\d,]+) pairs kept of ([\d,]+) pairs judged", card).groups()
    pool_agreement, agreement = re.search(r"\| agreement \| ([\d.]+%|-) \| ([\d.]+%|-) \|", card).groups()
    assert f"Pairs judged\n\n{judged}" in text and f"Pairs kept\n\n{kept}" in text
    assert f"Judge-human agreement (SIMULATED)\n\n{agreement}" in text
    assert f"Agreement, judged pool\n\n{pool_agreement}" in text
    for label in ("chosen answer is the longer", "chosen was shown first (response A)"):
        pool, version = re.search(rf"\| {re.escape(label)} \| ([\d.]+%) \| ([\d.]+%) \|", card).groups()
        assert f"{pool} → {version}" in text, label
    # counts are integers and percentages have one decimal: no "5,432.0000", "0.5002" or "4.398e+05"
    assert not re.search(r"\d\.0000\b", text), re.findall(r".{20}\d\.0000.{5}", text)[:3]
    assert not re.search(r"\b0\.\d{4}\b", text.split("Calibration and bias")[0]) and "e+0" not in text
    assert "Deploy" not in text
    assert "SIMULATED" in text  # the evaluation's served model says its verdicts were simulated
    assert f"{evaluation:.1f}%" in text
    assert overflow and all(scroll <= client + 1 for scroll, client in overflow), overflow
    assert len(charts) >= 7 and all(charts)
    margin_chart = next(c for c in charts if "|mean margin| of judged pairs" in c)
    assert all(str(n) in margin_chart for _, n in margins)  # each bar's label is its pair count
    failure_chart = next(c for c in charts if "failed judgments" in c)
    assert all(reason[:15] in " ".join(failure_chart) and str(n) in failure_chart for reason, n in failures)
    assert (tmp_path / "dashboard.png").stat().st_size > 50_000
