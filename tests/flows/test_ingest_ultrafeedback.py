"""`curate synth ultrafeedback` then `curate ingest --source ultrafeedback`, as a person runs them: several pairs a
row land in a fresh warehouse, every row is accounted for, and the bias audit sees the models."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from curator.cli import app
from schemas.pair import MODEL_A, MODEL_B
from tasks.curate.bias import MARKDOWN_RE2
from tasks.ingest.synth_rows import SynthManifest
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
        s = curate_pipeline(sources=[f"ultrafeedback={data}"], endpoints=[server.url], dataset="uf", publish_to=str(out),
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


def _uf_row(instruction: str, *scores: float) -> dict:
    import zlib

    from tasks.ingest.synth_rows import TextMaker

    texts = TextMaker(zlib.crc32(instruction.encode()))  # answers far apart: no pair is a near duplicate of another
    return {"source": "evol_instruct", "instruction": instruction, "models": [f"m-{k}" for k in range(len(scores))],
            "completions": [{"model": f"m-{k}", "response": texts.text(120), "fine-grained_score": s,
                             "overall_score": 7.0, "annotations": {"helpfulness": {"Rating": "4"}}}
                            for k, s in enumerate(scores)],
            "correct_answers": ["None"]}


def test_a_huge_row_and_non_finite_scores_lose_only_their_completions_through_curate_ingest(tmp_path, warehouse_path):
    """One row of 5,000 completions pairs its first 16 (it made 3,761 pairs without a cap); a NaN score and a
    1e309 one (read as infinity) each lose their completion, not the row's other pairs."""
    huge = json.dumps(_uf_row("Name a prime.", 5.0, *[2.0] * 4999))
    nan = json.dumps(_uf_row("Name a colour.", 5.0, 3.0, 2.0)).replace('"fine-grained_score": 2.0',
                                                                         '"fine-grained_score": NaN')
    inf = json.dumps(_uf_row("Name a river.", 5.0, 3.0, 2.0)).replace('"fine-grained_score": 3.0, "overall_score": 7.0',
                                                                        '"fine-grained_score": 3.0, "overall_score": 1e309')
    good = json.dumps(_uf_row("Name a city.", 5.0, 3.0, 2.0))
    beside = json.dumps(_uf_row("Name a sea.", 5.0, 3.0)).replace('["None"]', "[NaN]")
    assert "NaN" in nan and "1e309" in inf
    data = tmp_path / "uf.jsonl"
    data.write_text("\n".join([huge, nan, inf, good, beside]) + "\n")

    s = _ingest(data, warehouse_path)
    assert (s["read"], s["rows_paired"], s["rows_partly_quarantined"], s["quarantined_rows"]) == (5, 4, 3, 4)
    assert s["quarantined"] == {"completions_over_cap(<=16)": 1, "completion_not_finite:fine-grained_score": 1,
                                "completion_not_finite:overall_score": 1, "not_finite:correct_answers": 1}
    assert s["valid"] == s["new_pairs"] == 15 + 1 + 1 + 2
    with Warehouse(warehouse_path, read_only=True) as wh:
        stored = dict(wh.query("SELECT split_part(source_id, ':', 1), count(*) FROM candidate_pairs GROUP BY 1"))
        quarantined = sorted(wh.query("SELECT stage, reasons FROM quarantine ORDER BY position"))
    assert sorted(stored.values()) == [1, 1, 2, 15]
    assert quarantined == sorted([("adapter", ["completions_over_cap(<=16)"]),
                                  ("adapter", ["completion_not_finite:fine-grained_score"]),
                                  ("adapter", ["completion_not_finite:overall_score"]),
                                  ("raw", ["not_finite:correct_answers"])])
