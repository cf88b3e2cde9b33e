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


def test_ultrafeedback_goes_through_judge_build_and_publish_like_any_source(tmp_path, warehouse_path):
    """The same pipeline as every source: its pairs are judged, kept by the policy into a version whose bias audit
    reads the models' families and whose calibration counts its clear labels, then published."""
    import pyarrow.parquet as pq

    from flows.pipeline import curate_pipeline
    from tasks.ingest.synth import write_synth
    from testing.genrm_standin import StandinConfig, StandinProcess

    data = tmp_path / "uf.jsonl"
    write_synth(data, "ultrafeedback", 80, seed=5, pair_bytes=500, bad_rate=0.0, exact_dup_rate=0.0,
                near_dup_rate=0.0)
    out = tmp_path / "published"
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        s = curate_pipeline([f"ultrafeedback={data}"], [server.url], dataset="uf", publish_to=str(out),
                            warehouse=str(warehouse_path))
    assert s["ingest"]["ultrafeedback"]["new_pairs"] > s["ingest"]["ultrafeedback"]["rows_paired"] // 2
    assert s["judge"]["judged"] > 0 and s["version"]["new_version"] and s["publish"]["published"]
    with Warehouse(warehouse_path, read_only=True) as wh:
        meta = wh.versions.version_meta("uf")
    stats = meta["stats"]
    assert stats["by_source"] == {"ultrafeedback": meta["row_count"]} and meta["row_count"] > 0
    families = stats["bias"]["pool"]["model_families"]
    assert families and all(f["pairs"] > 0 for f in families.values())  # the bias audit sees the models
    assert stats["calibration"]["labelled"] > 0  # a rating difference of 1.0 or more is a clear label
    shards = list(out.rglob("data/dpo/*.parquet"))
    assert shards and {src for f in shards for src in pq.read_table(f, columns=["source"]).column("source").to_pylist()} \
        == {"ultrafeedback"}
