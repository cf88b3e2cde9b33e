"""The detector-model seam for names and street addresses: `CURATE_PII_DETECTOR=MODULE:FUNCTION` is loaded and
run on every text, its spans kept where no rule's finding is, and the rules a pair was scanned under name it.
Presidio and GLiNER cannot be installed with their weights here: only their refusal when absent is tested."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from common.errors import InvalidInputError
from tasks.ingest.pii import RULES
from tasks.ingest.pii_detector import Detector, load_detector, rules_of
from tasks.ingest.pii_facts import scan_tables

SPEC = f"{__name__}:toy_names"
NAMES = re.compile(r"Jane Roe|221B Baker Street|jane\.roe@gmail\.com")


def toy_names(texts: list[str]) -> list[list[tuple[str, int, int]]]:
    """A stand-in for a model: a listed name is a name, a listed street an address. It also claims the e-mail
    address as a name, which the rules' finding must win."""
    return [[("address" if m.group().startswith("221B") else "name", m.start(), m.end())
             for m in NAMES.finditer(t)] for t in texts]


def test_a_module_function_is_loaded_and_its_spans_become_findings() -> None:
    detector = load_detector(SPEC)
    assert detector.findings(["ask Jane Roe at 221B Baker Street", ""]) == [
        [("name", 4, 12), ("address", 16, 33)], []]
    assert rules_of(detector) == f"{RULES}+{SPEC}" and rules_of(None) == RULES


@pytest.mark.parametrize(("spec", "said"), [
    ("nothing", "one of presidio, gliner"),
    ("no_such_module_here:f", "cannot be loaded: No module named 'no_such_module_here'"),
    (f"{__name__}:absent", f"{__name__} has no function absent"),
    ("presidio", "CURATE_PII_DETECTOR=presidio cannot be loaded"),
    ("gliner:some/model", "CURATE_PII_DETECTOR=gliner:some/model cannot be loaded"),
])
def test_a_detector_that_cannot_be_loaded_is_one_line_naming_it(spec: str, said: str) -> None:
    if spec in ("presidio", "gliner:some/model"):
        for module in ("presidio_analyzer", "gliner"):
            try:
                __import__(module)
                pytest.skip(f"{module} is installed")
            except ImportError:
                pass
    with pytest.raises(InvalidInputError, match=re.escape(said)):
        load_detector(spec)


def test_a_span_of_another_kind_or_outside_its_text_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="kinds are name, address"):
        Detector("x", lambda texts: [[("email", 0, 1)] for _ in texts]).findings(["ab"])
    with pytest.raises(InvalidInputError, match="for a text of 2 characters"):
        Detector("x", lambda texts: [[("name", 0, 9)] for _ in texts]).findings(["ab"])
    with pytest.raises(InvalidInputError, match="answered 0 texts for 1"):
        Detector("x", lambda texts: []).findings(["ab"])


def test_the_scan_stores_the_model_s_spans_beside_the_rules_and_names_it_in_its_rules() -> None:
    history = [{"role": "user", "content": "I am Jane Roe, mail jane.roe@gmail.com"}]
    scans, findings = scan_tables(["p1", "p2"], [history, [{"role": "user", "content": "no one"}]],
                                  ["ship to 221B Baker Street", "fine"], ["ok", "ok"], datetime(2026, 1, 1),
                                  detector=load_detector(SPEC))
    assert scans.column("rules").to_pylist() == [f"{RULES}+{SPEC}"] * 2
    rows = list(zip(*(findings.column(c).to_pylist() for c in ("pair_id", "part", "kind", "span_start")),
                    strict=True))
    # the e-mail address is the rules' finding: the model's overlapping "name" there is not kept
    assert rows == [("p1", "history", "name", 5), ("p1", "history", "email", 20), ("p1", "response_a", "address", 8)]
    plain_scans, plain = scan_tables(["p1"], [history], ["ship to 221B Baker Street"], ["ok"], detector=None)
    assert plain_scans.column("rules").to_pylist() == [RULES] and plain.column("kind").to_pylist() == ["email"]


def test_an_ingest_naming_a_detector_that_cannot_load_is_refused_before_any_run(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from common.settings import get_settings
    from curator.cli import app
    from tasks.ingest.synth import write_synth

    write_synth(tmp_path / "hs.jsonl", "helpsteer3", 5, seed=1)
    monkeypatch.setenv("CURATE_PII_DETECTOR", "no_such_module_here:find")
    get_settings.cache_clear()
    done = CliRunner().invoke(app, ["ingest", "--source", "helpsteer3", "--path", str(tmp_path / "hs.jsonl"),
                                    "--warehouse", str(tmp_path / "w.duckdb")])
    assert done.exit_code == 2, done.output
    assert "CURATE_PII_DETECTOR=no_such_module_here:find cannot be loaded" in done.output
    from warehouse.store import Warehouse

    if (tmp_path / "w.duckdb").exists():  # the refusal may come after the warehouse is made: no run in it
        with Warehouse(tmp_path / "w.duckdb", read_only=True) as wh:
            assert wh.query("SELECT count(*) FROM ingest_runs")[0][0] == 0
