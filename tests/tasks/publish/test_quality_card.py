"""The certification's risk-coverage plot: a valid SVG whose marked points are the rows of the card's table, its
line every threshold tried, drawn where the figures say."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

from common.numbers import percent
from tasks.publish.quality_card import (
    CURVE_ROWS,
    RISK_COVERAGE_PLOT,
    certification_markdown,
    curve_rows,
    risk_coverage_svg,
)

SVG = "{http://www.w3.org/2000/svg}"


def _cert(points: int, certified_at: int, seed: int = 0) -> dict:
    """A certification report's figures as `certification_report` writes them: thresholds from strict to loose,
    coverage rising and the certified agreement falling, the loosest one tried accepting every pair."""
    rng = np.random.default_rng(seed)
    coverage = np.sort(rng.uniform(0.02, 1.0, points))
    coverage[-1] = 1.0
    bound = np.sort(rng.uniform(0.6, 0.99, points))[::-1]
    thresholds = [round(float(t), 6) for t in np.sort(rng.uniform(0.3, 1.0, points))[::-1]]
    thresholds[-1] = None
    curve = [{"threshold": t, "coverage": round(float(c), 6), "calibration_accepted": int(10 + 5 * i),
              "disagreements": i, "agreement_bound": round(float(b), 6)}
             for i, (t, c, b) in enumerate(zip(thresholds, coverage, bound))]
    chosen = curve[certified_at]
    return {"target_agreement": 0.9, "risk": 0.05, "labels": "source", "calibration_share": 0.5,
            "calibration_pairs": 400, "scored_by": "p_correct", "bound": "Clopper-Pearson (exact binomial), one-sided",
            "certified": True, "threshold": chosen["threshold"], "calibration_accepted": chosen["calibration_accepted"],
            "calibration_disagreements": chosen["disagreements"], "estimated_agreement": chosen["agreement_bound"],
            "accepted": 700, "judged": 1000, "coverage": chosen["coverage"], "thresholds_tested": points,
            "curve": curve, "population": {}}


def _table_rows(markdown: str) -> list[list[str]]:
    table = markdown.split("| threshold | coverage of the judged pool |", 1)[1].split("\n\n", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_the_plot_marks_the_tables_rows_and_draws_every_threshold_tried():
    for points, certified_at in ((5, 3), (40, 17), (201, 150)):
        cert = _cert(points, certified_at, seed=points)
        svg = ET.fromstring(risk_coverage_svg(cert))  # well-formed XML, an SVG document
        assert svg.tag == f"{SVG}svg"
        circles = svg.findall(f"{SVG}circle")
        shown = curve_rows(cert["curve"], cert["threshold"])
        assert len(shown) <= CURVE_ROWS + 1 and len(circles) == len(shown)
        assert [(float(c.get("data-coverage")), float(c.get("data-agreement"))) for c in circles] == \
            [(p["coverage"], p["agreement_bound"]) for p in shown]
        # each dot says what the card's table row says, and the certified one is the one marked so
        table = _table_rows(certification_markdown(cert, {"pairs_kept": 700}))
        assert len(table) == len(circles)
        for row, circle in zip(table, circles):
            title = circle.find(f"{SVG}title").text
            threshold, coverage, agreement = re.fullmatch(
                r"(.+): coverage (\d+\.\d%), certified agreement (\d+\.\d%)", title).groups()
            assert [threshold, coverage, agreement] == [row[0], row[1], row[4]]
        assert sum("(certified)" in c.find(f"{SVG}title").text for c in circles) == 1
        # the line passes through every threshold tried, in order, placed by the same scale as the dots
        (line,) = svg.findall(f"{SVG}polyline")
        xy = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
        assert len(xy) == points
        dots = {(float(c.get("cx")), float(c.get("cy"))) for c in circles}
        assert dots <= set(xy)
        xs = [x for x, _ in xy]
        assert xs == sorted(xs) and xs[-1] == max(xs)  # coverage grows from strict to loose


def test_the_card_links_the_plot():
    markdown = certification_markdown(_cert(12, 6), {"pairs_kept": 700})
    assert f"]({RISK_COVERAGE_PLOT})" in markdown
    assert markdown.index(RISK_COVERAGE_PLOT) < markdown.index("| threshold | coverage of the judged pool |")


def test_the_target_line_sits_at_the_target():
    cert = _cert(30, 10)
    svg = ET.fromstring(risk_coverage_svg(cert))
    (target,) = [line for line in svg.findall(f"{SVG}line") if line.get("class") == "target"]
    assert target.find(f"{SVG}title").text == f"target {percent(0.9)}"
    # the target's height lies between the dots above it and those below it
    circles = svg.findall(f"{SVG}circle")
    above = [float(c.get("cy")) for c in circles if float(c.get("data-agreement")) > 0.9]
    below = [float(c.get("cy")) for c in circles if float(c.get("data-agreement")) < 0.9]
    assert all(y < float(target.get("y1")) for y in above) and all(y > float(target.get("y1")) for y in below)
