"""`curate synth ultrafeedback` then `curate ingest --source ultrafeedback`, as a person runs them: several pairs a
row land in a fresh warehouse, every row is accounted for, and the bias audit sees the models."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from curator.cli import app
from schemas.pair import MODEL_A, MODEL_B
from tasks.curate.bias import MARKDOWN_RE2
from tasks.ingest.synth import SynthManifest
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect
runner = CliRunner()


def _ingest(data, warehouse_path, *more):
    result = runner.invoke(app, ["ingest", "--source", "ultrafeedback", "--path", str(data), "--warehouse",
                                 str(warehouse_path), "--json", *more])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_ultrafeedback_rows_land_their_pairs_and_every_row_is_accounted_for(tmp_path, warehouse_path):
    data = tmp_path / "uf.jsonl"
    wrote = runner.invoke(app, ["synth", "ultrafeedback", str(data), "--rows", "600", "--seed", "12", "--pair-bytes",
                                "1200", "--bad-rate", "0.08"])
    assert wrote.exit_code == 0, wrote.output
    m = SynthManifest.from_json((tmp_path / "uf.jsonl.manifest.json").read_text())
    assert m.kind == "ultrafeedback" and m.rows == 600 and m.no_clear_preference

    s = _ingest(data, warehouse_path)
    partly = set(m.pairs) & set(m.bad_rows)
    assert s["read"] == 600 == s["rows_paired"] + s["quarantined_rows"] - s["rows_partly_quarantined"]
    assert (s["rows_paired"], s["rows_partly_quarantined"]) == (len(m.pairs), len(partly)) and partly
    assert s["quarantined_rows"] == len(m.bad_rows) + len(m.no_clear_preference)
    assert s["quarantined"]["no_clear_preference"] == len(m.no_clear_preference)
    assert s["valid"] == sum(m.pairs.values()) > s["rows_paired"]
    assert s["valid"] == s["already_ingested"] + s["exact_duplicates"] + s["near_duplicates"] + s["new_pairs"]
    assert s["exact_duplicates"] == sum(m.pairs[i] for i, _ in m.exact_duplicates)
    planted_near = sum(m.pairs[i] for i, *_ in m.near_duplicates)
    assert 0.8 * planted_near <= s["near_duplicates"] <= planted_near

    with Warehouse(warehouse_path, read_only=True) as wh:
        counts = wh.counts()
        stored = wh.query("SELECT source, count(*), count(DISTINCT source_id), min(human_label), max(human_label) "
                          "FROM candidate_pairs GROUP BY source")
        pool, _ = wh.versions.judged_pool("no-judge-yet", MARKDOWN_RE2)
        metadata = {pid: json.loads(meta) for pid, meta in wh.query("SELECT pair_id, metadata FROM candidate_pairs")}
    assert counts["candidate_pairs"] == s["new_pairs"] + s["near_duplicates"]
    assert counts["quarantine"] == s["quarantined_rows"]
    [(source, n, ids, lowest, highest)] = stored
    assert source == "ultrafeedback" and n == ids  # one source id per pair, though rows make several
    assert lowest <= -1.0 and highest >= 1.0  # response A is the better answer about half the time
    # the bias audit's pool reads the models under the canonical pair's keys, which the source wrote
    assert pool.num_rows == s["new_pairs"]
    models = dict(zip(pool.column("pair_id").to_pylist(), zip(pool.column("model_a").to_pylist(),
                                                              pool.column("model_b").to_pylist())))
    assert models == {pid: (metadata[pid][MODEL_A], metadata[pid][MODEL_B]) for pid in models}
    assert None not in {m for pair in models.values() for m in pair}

    again = _ingest(data, warehouse_path)
    assert again["read"] == 0 and again["note"].startswith("unchanged: ultrafeedback at file:")
    forced = _ingest(data, warehouse_path, "--force")
    assert forced["read"] == 600 and forced["already_ingested"] == s["valid"]  # every pair's sighting is known
    assert forced["new_pairs"] == forced["new_quarantined"] == forced["exact_duplicates"] == 0
