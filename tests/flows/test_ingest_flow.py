"""The real `ingest` flow on Prefect's ephemeral API, against a real DuckDB file."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows.ingest import SUMMARY_KEYS, ingest, load_eval_set
from schemas.summaries import EvalSetSummary, IngestSummary
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import SourceReadError, read_local
from tasks.ingest.sources import get_source
from tasks.ingest.synth import synth_eval_prompts, write_eval_set, write_synth
from tasks.ingest.validate import MissingColumnsError
from tests.summary_checks import assert_summary
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


def _pair_ids_by_row(path, kind, settings):
    """0-based row -> (source id, pair id), for rows that validate (the ground truth of the comparison)."""
    out = {}
    for batch in read_local(path, 1000):
        prepared = prepare_batch(batch, get_source(kind), settings, str(path))
        positions = [p for p in batch.positions if p not in {q.position for q in prepared.quarantined}]
        for pos, pair, pid in zip(positions, prepared.pairs, prepared.pair_ids):
            out[int(pos.rsplit(":", 1)[1]) - 1] = (pair.source_id, pid)
    return out


def test_ingest_lands_pairs_accounts_for_every_row_and_is_idempotent(tmp_path, warehouse_path, settings):
    prompts = synth_eval_prompts(40)
    write_eval_set(tmp_path / "eval.jsonl", prompts)
    data = tmp_path / "hs.jsonl"
    m = write_synth(data, "helpsteer3", 1500, seed=4, pair_bytes=3000, contamination_rate=0.02, eval_prompts=prompts)

    loaded = load_eval_set("rm-bench", path=str(tmp_path / "eval.jsonl"), warehouse=str(warehouse_path))
    assert loaded["prompts"] == 40 and loaded["contaminated_pairs"] == 0
    assert_summary(loaded, EvalSetSummary)

    s = ingest("helpsteer3", path=str(data), warehouse=str(warehouse_path), batch_size=400)
    assert set(SUMMARY_KEYS) <= set(s)
    assert_summary(s, IngestSummary)
    assert s["read"] == 1500 == s["valid"] + s["quarantined_rows"]
    assert s["valid"] == s["already_ingested"] + s["exact_duplicates"] + s["near_duplicates"] + s["new_pairs"]
    assert s["quarantined_rows"] == len(m.bad_rows)
    assert s["exact_duplicates"] == len(m.exact_duplicates)
    assert s["already_ingested"] == 0

    keys = _pair_ids_by_row(data, "helpsteer3", settings)
    ids = {row: pid for row, (_, pid) in keys.items()}
    with Warehouse(warehouse_path, read_only=True) as wh:
        counts = wh.counts()
        near = dict(wh.query("SELECT pair_id, kept_pair_id FROM near_duplicates"))
        contaminated = {r[0] for r in wh.query("SELECT DISTINCT pair_id FROM contamination")}
        run = wh.runs.ingest_runs(1)[0]
    assert counts["candidate_pairs"] == s["new_pairs"] + s["near_duplicates"]
    assert counts["quarantine"] == s["quarantined_rows"]
    assert counts["pair_sightings"] == len(set(keys.values()))  # one per distinct (source row, pair)
    assert run["status"] == "completed" and json.loads(run["summary"])["new_pairs"] == s["new_pairs"]

    planted_near = {ids[i]: ids[j] for i, j, _ in m.near_duplicates if i in ids and j in ids}
    assert set(near) <= set(planted_near)  # precision: only planted copies are flagged
    assert len(near) >= 0.8 * len(planted_near)
    planted_contaminated = {ids[i] for i, _ in m.contaminated}
    assert contaminated == planted_contaminated and s["contaminated"] == len(planted_contaminated)
    assert counts["pairs_for_curation"] == counts["candidate_pairs"] - len(near) - len(contaminated)

    skipped = ingest("helpsteer3", path=str(data), warehouse=str(warehouse_path), batch_size=400)
    assert skipped["read"] == 0 and skipped["note"].startswith("unchanged: helpsteer3 at file:")
    assert_summary(skipped, IngestSummary)
    again = ingest("helpsteer3", path=str(data), warehouse=str(warehouse_path), batch_size=400, force=True)
    assert again["new_pairs"] == again["exact_duplicates"] == again["near_duplicates"] == again["new_quarantined"] == 0
    assert again["already_ingested"] == s["valid"]
    assert "nothing new" in again["note"]
    with Warehouse(warehouse_path, read_only=True) as wh:
        after = wh.counts()
    assert {k: v for k, v in after.items() if k != "ingest_runs"} == {k: v for k, v in counts.items() if k != "ingest_runs"}


def test_a_second_source_with_the_same_comparisons_records_duplicates_not_pairs(tmp_path, warehouse_path):
    hs = tmp_path / "hs.jsonl"
    rows = [{"domain": "general", "language": "english", "context": [{"role": "user", "content": f"question {i}"}],
             "response1": f"first answer {i}", "response2": f"second answer {i}", "overall_preference": -2} for i in range(10)]
    hs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ingest("helpsteer3", path=str(hs), warehouse=str(warehouse_path))

    def part(t):
        return [{"type": "text", "text": t, "image": None, "mimeType": None}]

    arena = tmp_path / "arena.parquet"
    arena_rows = []
    for i in range(10):  # same comparisons, A and B swapped, one fresh
        user = {"role": "user", "content": part(f"question {i}" if i < 9 else "a new question")}
        a = {"role": "assistant", "content": part(f"second answer {i}")}
        b = {"role": "assistant", "content": part(f"first answer {i}")}
        arena_rows.append({"id": f"a{i}", "model_a": "m1", "model_b": "m2", "winner": "model_b",
                           "conversation_a": [user, a], "conversation_b": [user, b],
                           "full_conversation": [{"user": user, "model_side_a": a, "model_side_b": b}],
                           "language": "en", "is_code": False})
    pq.write_table(pa.Table.from_pylist(arena_rows), arena)
    s = ingest("arena", path=str(arena), warehouse=str(warehouse_path))
    assert (s["exact_duplicates"], s["new_pairs"]) == (9, 1)
    with Warehouse(warehouse_path, read_only=True) as wh:
        dups = wh.query("SELECT swapped, human_label FROM pair_sightings WHERE source = 'arena' AND NOT is_first")
        assert len(dups) == 9 and all(sw for sw, _ in dups) and all(lbl == -1.0 for _, lbl in dups)
        assert wh.counts()["candidate_pairs"] == 11


def test_truncated_parquet_fails_the_run_cleanly(tmp_path, warehouse_path):
    path = tmp_path / "arena.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": str(i), "winner": "tie"} for i in range(50)]), path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(SourceReadError, match="arena.parquet"):
        ingest("arena", path=str(path), warehouse=str(warehouse_path))


def test_wrong_file_for_the_source_names_the_missing_columns_and_writes_nothing(tmp_path, warehouse_path):
    path = tmp_path / "rm.jsonl"
    write_eval_set(path, synth_eval_prompts(30))
    with pytest.raises(MissingColumnsError, match="context"):
        ingest("helpsteer3", path=str(path), warehouse=str(warehouse_path))
    with Warehouse(warehouse_path, read_only=True) as wh:
        assert wh.counts()["quarantine"] == 0 and wh.counts()["candidate_pairs"] == 0
        assert wh.runs.ingest_runs(1)[0]["status"] == "failed"


def test_summary_is_left_as_a_table_artifact(tmp_path, warehouse_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    path = tmp_path / "a.jsonl"
    write_synth(path, "arena", 60, seed=9, pair_bytes=600)
    s = ingest("arena", path=str(path), warehouse=str(warehouse_path))
    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["ingest-arena"]), flow_run_id=ArtifactFilterFlowRunId(any_=[s["run_id"]])))
    assert len(arts) == 1 and arts[0].type == "table"
    table = arts[0].data if isinstance(arts[0].data, list) else json.loads(arts[0].data)
    rows = {r["measure"]: r["value"] for r in table}
    assert rows["read"] == 60 and rows["new_pairs"] == s["new_pairs"]


def test_parquet_with_wrong_column_types_quarantines_rows_naming_the_column(tmp_path, warehouse_path):
    rows = [{"domain": "general", "language": "english", "context": [{"role": "user", "content": f"q{i}"}],
             "response1": f"a{i}", "response2": f"b{i}", "overall_preference": "much better" if i % 4 == 0 else "1"}
            for i in range(40)]
    path = tmp_path / "hs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)  # overall_preference became a string column
    s = ingest("helpsteer3", path=str(path), warehouse=str(warehouse_path))
    assert s["read"] == 40 and s["new_pairs"] == 0
    assert s["quarantined"] == {"overall_preference:is_int": 40}
    with Warehouse(warehouse_path, read_only=True) as wh:
        positions = [r[0] for r in wh.query("SELECT position FROM quarantine ORDER BY position")]
    assert positions[0].startswith("hs.parquet[train][")
