"""`curate dashboard` rendered in headless Chromium: the page shows the test warehouse's numbers in its
metrics, tables and charts (Vega draws SVG, so bar labels are text)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.curator.dashboard.browser import Browser, _free_port, chromium
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture
def dashboard_url(dashboard_warehouse, tmp_path):
    warehouse, _, _ = dashboard_warehouse
    port = _free_port()
    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    log = open(tmp_path / "dashboard.log", "wb")
    proc = subprocess.Popen([curate, "dashboard", "--no-refresh", "--port", str(port), "--warehouse", str(warehouse)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "dashboard.log").read_text()[-3000:]
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
                break
            except OSError:
                assert time.time() < deadline, "the dashboard did not come up"
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


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
    browser = Browser(binary)
    try:
        text = browser.open(dashboard_url, ready_text="Judge quality checks")
        charts = browser.evaluate("Array.from(document.querySelectorAll('.vega-embed')).map(e => "
                                  "Array.from(e.querySelectorAll('svg.marks text')).map(t => t.textContent))")
        browser.screenshot(str(tmp_path / "dashboard.png"))
    finally:
        browser.close()
    assert "Traceback" not in text and "Error" not in text
    assert f"Pairs read\n\n{read:,}" in text
    # the stand-in judged this warehouse: a banner says so before anything else is read
    assert "SIMULATED verdicts." in text and text.index("SIMULATED verdicts.") < text.index("Pairs read")
    assert "Judge-human agreement (SIMULATED)" in text
    # counts are integers and percentages have one decimal: no "5,432.0000" or "51.7000"
    import re

    assert not re.search(r"\d\.0000\b", text), re.findall(r".{20}\d\.0000.{5}", text)[:3]
    assert "Deploy" not in text
    assert "SIMULATED" in text  # the evaluation's served model says its verdicts were simulated
    assert f"{evaluation:.4f}" in text or str(evaluation) in text
    assert len(charts) >= 7 and all(charts)
    margin_chart = next(c for c in charts if "|mean margin| of judged pairs" in c)
    assert all(str(n) in margin_chart for _, n in margins)  # each bar's label is its pair count
    failure_chart = next(c for c in charts if "failed judgments" in c)
    assert all(reason[:15] in " ".join(failure_chart) and str(n) in failure_chart for reason, n in failures)
    assert (tmp_path / "dashboard.png").stat().st_size > 50_000
