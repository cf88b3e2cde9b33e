"""A declared source whose prompts hold an e-mail address, a phone number, an `sk-` key and an AWS key id, through
the CLI: ingested (each pair scanned once, its findings stored as kind, part and span), judged by the stand-in,
built (`--pii redact`, the default) and published to a folder: no planted value is in a published file, each is
its placeholder, and the card, `build-version --json` and `curate status` count them. The warehouse keeps the
texts as ingested; `drop` leaves the pairs out under their own reason; pairs landed before the scan existed are
scanned by the backfill, their ids unchanged; a declaration's `redistribute = false` is refused by a public Hub
repository."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from curator.cli import app
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

EMAIL = "jane.doe42@gmail.com"
PHONE = "+1 415 555 2671"
SK_KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
AWS_KEY = "AKIAQ3EGRTWNX7ZP5KLM"
PLANTED = {EMAIL: "<EMAIL>", PHONE: "<PHONE>", SK_KEY: "<SECRET>", AWS_KEY: "<SECRET>"}
WORDS = ("how do I configure the deployment so that the service starts after the database is ready and the logs go "
         "to the right place").split()
ROWS, WITH_PII = 80, 20  # the first 20 prompts hold one planted value each, 5 of each
NAME, NAMED_EVERY = "Jane Roe", 10  # a name only a detector model finds, in every tenth answer
DETECTOR = "tests.tasks.ingest.test_pii_detector:toy_names"


def _rows(path: Path) -> None:
    rng = random.Random(3)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    contexts = [f"my address is {EMAIL}, please write", f"call me at {PHONE} tomorrow",
                f"here is my config:\n```\nOPENAI_API_KEY={SK_KEY}\n```\nwhy does it fail?",
                f"aws_access_key_id = {AWS_KEY}"]
    with path.open("w", encoding="utf-8") as f:
        for i in range(ROWS):
            planted = contexts[i % 4] if i < WITH_PII else sentence(5)
            f.write(json.dumps({"question": f"{sentence(12)} {planted} (case {i})",
                                "answer_1": f"{sentence(30)} {'a' * (i % 7)}",
                                "answer_2": f"{sentence(25)} the short answer {i}"
                                            + (f" (signed, {NAME})" if i % NAMED_EVERY == 0 else ""),
                                "winner": rng.choice(["1", "2"])}) + "\n")


def _declare(folder: Path, extra: str = "") -> Path:
    toml = folder / "sources.toml"
    toml.write_text('[sources.team-pairs]\npath = "pairs.jsonl"\nformat = "pairwise"\n'
                    'columns = { prompt = "question", response_a = "answer_1", response_b = "answer_2", '
                    'preference = "winner" }\nlabel = { a = "1", b = "2" }\nlicense = "cc-by-4.0"\n' + extra,
                    encoding="utf-8")
    return toml


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _json(output: str) -> dict:
    return json.loads(output[output.index("{"):])


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    from testing.genrm_standin import StandinConfig, StandinProcess

    folder = tmp_path_factory.mktemp("personal-data")
    _rows(folder / "pairs.jsonl")
    toml = _declare(folder, 'redistribute = false\n')
    warehouse = folder / "warehouse.duckdb"
    _cli("ingest", "--source", "team-pairs", "--sources-file", str(toml), "--warehouse", str(warehouse))
    with StandinProcess(StandinConfig(latency_mean=0.002, capacity=128)) as server:
        _cli("judge", "--endpoint", server.url, "--warehouse", str(warehouse))
    return warehouse


def test_the_ingest_stores_each_finding_as_kind_part_and_span_never_the_text(judged) -> None:
    with Warehouse(judged, read_only=True) as wh:
        kinds = dict(wh.query("SELECT kind, count(*) FROM pii_findings GROUP BY kind"))
        parts = {r[0] for r in wh.query("SELECT DISTINCT part FROM pii_findings")}
        scanned = wh.query("SELECT count(*) FROM pii_scans")[0][0]
        columns = {r[0] for r in wh.query("SELECT column_name FROM duckdb_columns() WHERE table_name = 'pii_findings'")}
        spans = wh.query("SELECT p.history[f.message + 1].content[f.span_start + 1:f.span_end] FROM pii_findings f "
                         "JOIN candidate_pairs p USING (pair_id)")
    assert kinds == {"email": 5, "phone": 5, "secret": 10} and parts == {"history"} and scanned == ROWS
    assert columns == {"pair_id", "part", "message", "kind", "span_start", "span_end"}  # no text column
    assert {s for (s,) in spans} == set(PLANTED)  # the spans are exactly the planted values


def test_a_published_version_holds_every_finding_redacted_and_its_card_counts_them(judged, tmp_path) -> None:
    built = _json(_cli("build-version", "team", "--pii", "redact", "--min-abs-margin", "0", "--json",
                       "--warehouse", str(judged)))
    pii = built["stats"]["pii"]
    assert {k: v["findings"] for k, v in pii["kinds"].items() if v["findings"]} == {"email": 5, "phone": 5,
                                                                                     "secret": 10}
    assert pii["redacted"] == 20 and pii["kept"] == 0 and pii["dropped_pairs"] == 0
    assert pii["not_scanned"] == "names and street addresses"
    _cli("publish", "team", "--to", str(tmp_path / "out"), "--warehouse", str(judged))
    (folder,) = (tmp_path / "out" / "team").iterdir()
    published = "".join(str(pq.read_table(f).to_pylist()) for f in sorted(folder.glob("data/*/*.parquet")))
    assert not [value for value in PLANTED if value in published]
    dpo = "".join(str(pq.read_table(f).to_pylist()) for f in folder.glob("data/dpo/*.parquet"))
    assert (dpo.count("<EMAIL>"), dpo.count("<PHONE>"), dpo.count("<SECRET>")) == (5, 5, 10)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "| email | redact | 5 | 5 | 5 in 5 pairs, replaced by `<EMAIL>` |" in card
    assert "| secret | redact | 10 | 10 | 10 in 10 pairs, replaced by `<SECRET>` |" in card
    assert "**Names and street addresses are not scanned**" in card
    assert not [value for value in PLANTED if value in card]
    status = _json(_cli("status", "--json", "--warehouse", str(judged)))
    assert status["personal_data"]["kinds"]["secret"] == {"findings": 10, "pairs": 10}
    assert {v["version"]: v["figures"]["pii"]["redacted"] for v in status["versions"]} == {built["version"]: 20}
    with Warehouse(judged, read_only=True) as wh:  # the warehouse keeps the texts as ingested
        held = wh.query("SELECT count(*) FROM candidate_pairs WHERE history[1].content LIKE ?", [f"%{EMAIL}%"])
    assert held[0][0] == 5


def test_drop_leaves_the_pairs_out_under_their_own_reason_and_redaction_is_in_the_hash(judged) -> None:
    redacted = _json(_cli("build-version", "kinds", "--min-abs-margin", "0", "--json", "--warehouse", str(judged)))
    kept = _json(_cli("build-version", "kinds", "--pii", "keep", "--min-abs-margin", "0", "--json",
                      "--warehouse", str(judged)))
    assert kept["new_version"] and kept["content_hash"] != redacted["content_hash"]
    assert kept["stats"]["pii"]["kept"] == 20 and kept["stats"]["pii"]["redacted"] == 0
    dropped = _json(_cli("build-version", "kinds", "--pii", "drop", "--min-abs-margin", "0", "--json",
                         "--warehouse", str(judged)))
    assert dropped["rows"] == ROWS - WITH_PII and dropped["stats"]["dropped"] == {"personal_data": WITH_PII}
    assert dropped["stats"]["pii"]["dropped_pairs"] == WITH_PII


def test_a_declaration_saying_redistribute_false_is_refused_by_a_public_hub_repository(judged) -> None:
    built = _json(_cli("build-version", "shared", "--min-abs-margin", "0", "--json", "--warehouse", str(judged)))
    # refused before Prefect starts or the Hub is asked anything
    result = CliRunner().invoke(app, ["publish", "shared", "--to", "hf://curators/shared", "--allow-simulated",
                                      "--warehouse", str(judged)])
    assert result.exit_code == 2, result.output
    assert f"team-pairs ({built['rows']} rows)" in result.output and "--allow-restricted-licenses" in result.output


def test_pairs_landed_before_the_scan_are_scanned_by_the_backfill_their_ids_unchanged(judged, tmp_path) -> None:
    import shutil

    copy = tmp_path / "older.duckdb"
    shutil.copy(judged, copy)
    with Warehouse(copy) as wh:
        ids = wh.query("SELECT pair_id FROM candidate_pairs ORDER BY pair_id")
        wh.con.execute("DELETE FROM pii_findings")
        wh.con.execute("DELETE FROM pii_scans")
    built = _json(_cli("build-version", "older", "--min-abs-margin", "0", "--json", "--warehouse", str(copy)))
    assert built["stats"]["pii"]["redacted"] == 20 and built["stats"]["pii"]["scanned_pairs"] == ROWS
    with Warehouse(copy, read_only=True) as wh:
        assert wh.query("SELECT pair_id FROM candidate_pairs ORDER BY pair_id") == ids
        assert wh.query("SELECT count(*) FROM pii_findings")[0][0] == 20


def test_a_configured_detector_model_scans_every_pair_again_and_its_names_are_redacted(judged, tmp_path,
                                                                                       monkeypatch) -> None:
    """`CURATE_PII_DETECTOR` names a detector model (here a function standing in for one): the next build scans
    every pair again under rules naming it, and its names are redacted, counted and said on the card."""
    import shutil

    from common.settings import get_settings

    copy = tmp_path / "named.duckdb"
    shutil.copy(judged, copy)
    before = _json(_cli("build-version", "named", "--min-abs-margin", "0", "--json", "--warehouse", str(copy)))
    assert before["stats"]["pii"]["not_scanned"] == "names and street addresses"
    assert "name" not in before["stats"]["pii"]["kinds"]
    monkeypatch.setenv("CURATE_PII_DETECTOR", DETECTOR)
    get_settings.cache_clear()
    built = _json(_cli("build-version", "named", "--min-abs-margin", "0", "--json", "--warehouse", str(copy)))
    pii = built["stats"]["pii"]
    assert built["new_version"] and pii["models"] == {DETECTOR: ROWS} and pii["not_scanned"] is None
    assert pii["kinds"]["name"]["findings"] == ROWS // NAMED_EVERY and pii["kinds"]["name"]["action"] == "redact"
    assert pii["redacted"] == 20 + pii["kinds"]["name"]["version_findings"]
    _cli("publish", "named", "--to", str(tmp_path / "out"), "--warehouse", str(copy))
    (folder,) = (tmp_path / "out" / "named").iterdir()
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"Names and street addresses were scanned by the detector model `{DETECTOR}` ({ROWS} pairs)" in card
    dpo = "".join(str(pq.read_table(f).to_pylist()) for f in folder.glob("data/dpo/*.parquet"))
    assert NAME not in dpo and dpo.count("<NAME>") == pii["kinds"]["name"]["version_findings"] > 0
    status = _json(_cli("status", "--json", "--warehouse", str(copy)))
    assert status["personal_data"]["models"] == {DETECTOR: ROWS}
