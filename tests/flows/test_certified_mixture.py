"""A certified version over two sources, one with people's labels and one with none: the certificate speaks for
the labelled source's pairs alone, and every surface says which rows it does not cover. By default they are left
out with their own reason; with `uncovered = "keep"` they are kept uncertified and counted apart, by source, on the
card's first paragraph, in `stats.certification`, in `curate status` and on the dashboard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from common.numbers import count
from curator.cli import app
from tasks.ingest.synth import write_synth
from tests.flows.conftest import ingest_clean_pairs
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

LABELLED, UNLABELLED = 1000, 300


def _unlabelled_source(folder: Path) -> Path:
    """A declared pairwise source (`vendor`) whose rows carry no preference at all, and its sources file."""
    synth = folder / "vendor-synth.jsonl"
    write_synth(synth, "helpsteer3", UNLABELLED, seed=77, pair_bytes=500, bad_rate=0.0, exact_dup_rate=0.0,
                near_dup_rate=0.0)
    rows = []
    for i, line in enumerate(synth.read_text().splitlines()):
        r = json.loads(line)
        rows.append({"id": f"v{i}", "prompt": r["context"][-1]["content"], "response_a": r["response1"],
                     "response_b": r["response2"], "preference": None})
    (folder / "vendor.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sources = folder / "sources.toml"
    sources.write_text('[sources.vendor]\npath = "vendor.jsonl"\nformat = "pairwise"\n'
                       'label = { a = "a", b = "b", tie = ["tie"] }\nlicense = "cc-by-4.0"\ndomain = "general"\n'
                       'language = "en"\n')
    return sources


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    from flows.ingest import ingest
    from flows.judge import judge
    from testing.genrm_standin import StandinConfig, StandinProcess

    folder = tmp_path_factory.mktemp("mixed")
    warehouse = folder / "warehouse.duckdb"
    ingest_clean_pairs(folder, warehouse, LABELLED, seed=43)
    ingest("vendor", warehouse=str(warehouse), sources_file=str(_unlabelled_source(folder)))
    with StandinProcess(StandinConfig(latency_mean=0.002, capacity=128)) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(warehouse))
    return folder, warehouse


def _card(warehouse: Path, name: str, to: Path) -> str:
    """The first paragraph of the guarantee on the published card."""
    from flows.publish import publish

    folder = Path(publish(name, to=str(to), warehouse=str(warehouse))["target"])
    return (folder / "README.md").read_text().split("**At least", 1)[1].split("\n\n", 1)[0]


def _build(warehouse: Path, folder: Path, name: str, *policy_lines: str) -> dict:
    policy = folder / f"{name}.toml"
    policy.write_text("[policy]\ntarget_agreement = 0.9\n" + "".join(line + "\n" for line in policy_lines))
    result = CliRunner().invoke(app, ["build-version", name, "--policy", str(policy), "--warehouse", str(warehouse),
                                      "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _rows_by_source(warehouse: Path, name: str, version: int) -> dict[str, int]:
    with Warehouse(warehouse, read_only=True) as wh:
        rows = wh.versions.version_rows(name, version)
    out: dict[str, int] = {}
    for r in rows:
        out[r["source"]] = out.get(r["source"], 0) + 1
    return out


def test_pairs_no_label_speaks_for_are_left_out_and_named(mixed):
    folder, warehouse = mixed
    built = _build(warehouse, folder, "mix-drop")
    cert = built["stats"]["certification"]
    assert cert["certified"] and set(cert["populations"]) == {"helpsteer3"}
    # every judged vendor pair is named as not covered, and none of them is kept
    assert set(cert["not_covered"]) == {"vendor"} and 0 < cert["not_covered"]["vendor"] <= UNLABELLED
    assert cert["kept_not_covered"] == 0
    kept = _rows_by_source(warehouse, "mix-drop", built["version"])
    assert set(kept) == {"helpsteer3"} and kept["helpsteer3"] == cert["kept_by_source"]["helpsteer3"]["certified"]
    first = _card(warehouse, "mix-drop", folder / "published-drop")
    assert f"{count(kept['helpsteer3'])} certified pairs ({count(kept['helpsteer3'])} from helpsteer3)" in first
    assert (f"{count(cert['not_covered']['vendor'])} judged pairs no calibration label speaks for were left out "
            f"({count(cert['not_covered']['vendor'])} from vendor)") in first


def test_pairs_kept_uncertified_are_counted_apart_everywhere(mixed):
    folder, warehouse = mixed
    built = _build(warehouse, folder, "mix-keep", 'uncovered = "keep"')
    cert = built["stats"]["certification"]
    kept = _rows_by_source(warehouse, "mix-keep", built["version"])
    by = cert["kept_by_source"]
    assert kept["vendor"] == by["vendor"]["not_covered"] == cert["kept_not_covered"] > 0
    assert by["vendor"]["certified"] == 0 and kept["helpsteer3"] == by["helpsteer3"]["certified"]
    first = _card(warehouse, "mix-keep", folder / "published-keep")
    assert f"{count(kept['helpsteer3'])} certified pairs ({count(kept['helpsteer3'])} from helpsteer3)" in first
    assert (f"{count(kept['vendor'])} pairs no calibration label speaks for are kept uncertified "
            f"({count(kept['vendor'])} from vendor): the statement says nothing of them.") in first

    status = CliRunner().invoke(app, ["status", "--warehouse", str(warehouse)])
    assert status.exit_code == 0, status.output
    # the certified versions' table: its last two cells are the pairs not covered and those of them kept
    (line,) = [ln for ln in status.output.splitlines() if "mix-keep" in ln and "source" in ln]
    cells = line.split()
    assert cells[-2:] == [count(sum(cert["not_covered"].values())), count(kept["vendor"])]
