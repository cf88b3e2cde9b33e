"""What a source says of its labels travels with its pairs: an ingest stores the facts in the warehouse, a build on
a host whose code does not know the source reads the pairs as they were meant, a changed meaning is refused
before anything is written, and a changed license only updates."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from curator.cli import app
from flows.ingest import ingest
from flows.publish import publish
from flows.versions import build_version
from tasks.ingest.source_facts import SourceMeaningChangedError
from tasks.ingest.sources import SOURCES
from tests.flows.conftest import judged_as_source
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

NAME = "strict-made-up"  # a source only this test's code knows: HelpSteer3's rows, a stricter clear label
STRICT = dataclasses.replace(SOURCES["helpsteer3"], name=NAME, clear_label=3.0, label_meaning=None,
                             license="made-up-license-1")


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A warehouse with 800 pairs of `NAME` (ingested while the code knew it) judged by the stand-in."""
    return judged_as_source(tmp_path_factory.mktemp("facts"), NAME, STRICT, 800, seed=31, pair_bytes=400)


def _state(path) -> dict:
    with Warehouse(path, read_only=True) as wh:
        return {"runs": wh.query("SELECT count(*) FROM ingest_runs")[0][0],
                "pins": wh.query("SELECT count(*) FROM source_pins")[0][0],
                "facts": wh.sources.source_facts()}


def test_a_host_whose_code_does_not_know_the_source_reads_its_labels_as_stored(judged, monkeypatch):
    path, _ = judged
    monkeypatch.setitem(SOURCES, NAME, STRICT)
    known = build_version("with-source", warehouse=str(path))
    monkeypatch.delitem(SOURCES, NAME)  # another host, another build: the registry has never heard of it
    assert NAME not in SOURCES
    unknown = build_version("without-source", warehouse=str(path))
    with Warehouse(path, read_only=True) as wh:
        strict, lenient = wh.query("SELECT count(*) FILTER (WHERE abs(human_label) >= 3), "
                                   "count(*) FILTER (WHERE abs(human_label) >= 1) FROM candidate_pairs")[0]
        rows = {v: {r["pair_id"]: r["p_correct"] for r in wh.versions.version_rows(v, 1)}
                for v in ("with-source", "without-source")}
    a, b = known["stats"]["calibration"], unknown["stats"]["calibration"]
    assert a["labelled"] == b["labelled"] and a.get("ece") == b.get("ece") and a.get("brier") == b.get("brier")
    assert rows["with-source"] == rows["without-source"] and known["content_hash"] == unknown["content_hash"]
    # the stored clear label (3), not the default a source nobody knows would get (1): far fewer labels count
    assert 0 < b["labelled"] <= strict < lenient
    facts = unknown["stats"]["source_facts"][NAME]
    assert facts == {**facts, "facts": "warehouse", "clear_label": 3.0, "human_labels": True}


def test_the_card_names_the_labels_and_the_license_the_warehouse_stores(judged, monkeypatch, tmp_path):
    path, _ = judged
    monkeypatch.delitem(SOURCES, NAME, raising=False)
    build_version("card", warehouse=str(path))
    publish("card", to=str(tmp_path / "out"), warehouse=str(path), allow_simulated=True)
    card = next((tmp_path / "out").rglob("README.md")).read_text()
    assert f"{NAME}: made-up-license-1" in card  # the stored license, though this code does not know the source
    assert f"Human labels came from {NAME} (" in card and "clear from |label| 3" in card
    assert "no facts stored" not in card


def test_a_changed_meaning_is_refused_before_anything_is_written(judged, monkeypatch):
    path, data = judged
    before = _state(path)
    monkeypatch.setitem(SOURCES, NAME, dataclasses.replace(STRICT, clear_label=2.0))
    with pytest.raises(SourceMeaningChangedError) as refused:
        ingest(NAME, path=str(data), warehouse=str(path), force=True)
    said = str(refused.value)
    assert "\n" not in said and f"source {NAME!r}" in said
    assert "clear_label 3.0 -> 2.0" in said and 'label_meaning.clear "|label| >= 3" -> "|label| >= 2"' in said
    assert _state(path) == before  # no run, no pin, the facts as they were

    result = CliRunner().invoke(app, ["ingest", "--source", NAME, "--path", str(data), "--warehouse", str(path),
                                      "--force"])
    assert result.exit_code == 2, result.output
    assert "clear_label 3.0 -> 2.0" in result.output and "Traceback" not in result.output
    assert _state(path) == before


def test_a_changed_license_only_updates_the_facts(judged, monkeypatch, caplog):
    path, data = judged
    first = _state(path)["facts"][NAME]
    monkeypatch.setitem(SOURCES, NAME, dataclasses.replace(STRICT, license="made-up-license-2"))
    summary = ingest(NAME, path=str(data), warehouse=str(path))  # unchanged rows: nothing read, the facts recorded
    after = _state(path)["facts"][NAME]
    assert json.loads(after["facts"])["license"] == "made-up-license-2"
    assert after["meaning_digest"] == first["meaning_digest"] and after["first_run_id"] == first["first_run_id"]
    assert after["last_run_id"] == summary["run_id"] != first["last_run_id"]
    assert 'updated license "made-up-license-1" -> "made-up-license-2"' in caplog.text
    monkeypatch.setitem(SOURCES, NAME, STRICT)
    ingest(NAME, path=str(data), warehouse=str(path))  # and back, for the other tests of the module
