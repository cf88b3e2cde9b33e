"""A damaged input file through the real ingest flow: every row that can be read lands, the run fails naming the
damage (never DuckDB's "connection is busy" in its place), and a rerun on the repaired file adds the rest
without adding anything twice. Both sources behave the same."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows.ingest import ingest
from tasks.ingest.read import SourceDamagedError
from tasks.ingest.synth import write_synth
from warehouse.ingest import IngestStore
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

KINDS = ["helpsteer3", "arena"]
BATCH = 60


def _pause(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.fixture
def slow_writes(monkeypatch):
    """Every batch write keeps the connection busy a while after it commits, so the damage is met while the last
    write still runs: the moment the error path used to touch the connection too."""
    real = IngestStore.write_ingest_batch

    def write(self, **tables):
        real(self, **tables)
        if not getattr(self, "_pause_registered", False):
            self.con.create_function("pause_for", _pause, ["DOUBLE"], "DOUBLE", side_effects=True)
            self._pause_registered = True
        self.con.execute("SELECT pause_for(0.4)").fetchall()

    with monkeypatch.context() as m:
        m.setattr(IngestStore, "write_ingest_batch", write)
        yield


def _contents(warehouse) -> dict[str, object]:
    """What an ingest left, whatever order the rows came in: a repaired file's rows may land after rows that
    follow them in the file, and then which of two duplicates is the first sighting (or the kept near
    duplicate) is the other one."""
    with Warehouse(warehouse, read_only=True) as wh:
        return {
            "pairs": set(wh.query("SELECT pair_id FROM candidate_pairs")),
            "sightings": set(wh.query("SELECT source, source_id, pair_id FROM pair_sightings")),
            "quarantine": set(wh.query("SELECT row_hash, position, stage FROM quarantine")),
            "near": {frozenset(r) for r in wh.query("SELECT pair_id, kept_pair_id FROM near_duplicates")},
            "rows": wh.query("SELECT (SELECT count(*) FROM candidate_pairs), (SELECT count(*) FROM pair_sightings), "
                             "(SELECT count(*) FROM quarantine), (SELECT count(*) FROM pair_signatures)")[0],
        }


def _reference(tmp_path, name: str, data: bytes, kind: str) -> dict[str, object]:
    """What a fresh warehouse holds after ingesting `data` as a file of the same name (positions name the file)."""
    folder = tmp_path / f"reference-{len(list(tmp_path.glob('reference-*')))}"
    folder.mkdir()
    (folder / name).write_bytes(data)
    ingest(kind, path=str(folder / name), warehouse=str(folder / "w.duckdb"), batch_size=BATCH)
    return _contents(folder / "w.duckdb")


def _run_damaged(kind, path, warehouse) -> SourceDamagedError:
    with pytest.raises(SourceDamagedError) as raised:
        ingest(kind, path=str(path), warehouse=str(warehouse), batch_size=BATCH)
    with Warehouse(warehouse, read_only=True) as wh:
        run = wh.runs.ingest_runs(1)[0]
    assert run["status"] == "failed" and run["error"] == f"SourceDamagedError: {raised.value}"
    assert "are in the warehouse" in raised.value.hint
    return raised.value


def _repair_and_rerun(kind, path, whole: bytes, warehouse, reference: dict[str, object]) -> None:
    path.write_bytes(whole)  # repaired in place
    s = ingest(kind, path=str(path), warehouse=str(warehouse), batch_size=BATCH)
    assert s["already_ingested"] > 0
    assert _contents(warehouse) == reference  # the rest landed, nothing twice


@pytest.mark.parametrize("damage", ["cut", "garbage"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_gzip_lands_every_complete_row_then_names_the_damage(tmp_path, warehouse_path, slow_writes, kind,
                                                                        damage):
    plain = tmp_path / "rows.jsonl"
    write_synth(plain, kind, 200, seed=7, pair_bytes=600)
    whole = gzip.compress(plain.read_bytes())
    damaged = whole[: len(whole) * 2 // 3] if damage == "cut" else whole + b"\0\0garbage after the stream" * 40
    path = tmp_path / f"{kind}.jsonl.gz"
    path.write_bytes(damaged)
    text = zlib.decompressobj(31).decompress(damaged)
    complete = text.count(b"\n")  # the lines whole in the damaged file
    assert 0 < complete < 200 if damage == "cut" else complete == 200

    err = _run_damaged(kind, path, warehouse_path)
    assert f"unreadable after line {complete:,}: " in str(err)
    assert f"(compressed byte {len(damaged) if damage == 'cut' else len(whole) + 2:,} of {len(damaged):,})" in str(err)
    complete_lines = text[: text.rindex(b"\n") + 1]
    assert _contents(warehouse_path) == _reference(tmp_path, path.name, gzip.compress(complete_lines), kind)

    _repair_and_rerun(kind, path, whole, warehouse_path, _reference(tmp_path, path.name, whole, kind))


def _damage_row_group(path, group: int) -> None:
    """Flip bytes in the middle of one row group's largest column chunk."""
    meta = pq.ParquetFile(path).metadata.row_group(group)
    chunk = max((meta.column(j) for j in range(meta.num_columns)), key=lambda c: c.total_compressed_size)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    data = bytearray(path.read_bytes())
    middle = start + chunk.total_compressed_size // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", KINDS)
def test_a_corrupt_parquet_page_costs_only_its_row_group(tmp_path, warehouse_path, slow_writes, kind):
    plain = tmp_path / "rows.jsonl"
    write_synth(plain, kind, 200, seed=8, pair_bytes=600, bad_rate=0.0)
    table = pa.Table.from_pylist([json.loads(line) for line in plain.read_text().splitlines()])

    def parquet(t: pa.Table) -> bytes:
        out = tmp_path / "tmp.parquet"
        # Plain pages without statistics: the middle of a column chunk is page data, not a header's min/max.
        pq.write_table(t, out, row_group_size=40, use_dictionary=False, write_statistics=False)
        return out.read_bytes()

    path = tmp_path / f"{kind}.parquet"
    whole = parquet(table)
    path.write_bytes(whole)
    _damage_row_group(path, 2)

    err = _run_damaged(kind, path, warehouse_path)
    assert str(err).startswith(f"{path}: row group 2 is damaged, rows 80-119 (40) were not read (")
    assert str(err).endswith("; the other 160 of 200 rows were read (row groups 0-4)")
    intact = parquet(pa.concat_tables([table.slice(0, 80), table.slice(120)]))
    # The reference file lacks the damaged group: its positions after it are shifted, so quarantine is counted.
    landed, expected = _contents(warehouse_path), _reference(tmp_path, path.name, intact, kind)
    assert len(landed.pop("quarantine")) == len(expected.pop("quarantine"))
    assert landed == expected

    _repair_and_rerun(kind, path, whole, warehouse_path, _reference(tmp_path, path.name, whole, kind))


def test_the_cli_lands_a_cut_gzip_then_exits_2_with_one_line_naming_the_damage(tmp_path):
    plain = tmp_path / "rows.jsonl"
    write_synth(plain, "arena", 120, seed=9, pair_bytes=600)
    whole = gzip.compress(plain.read_bytes())
    path = tmp_path / "arena.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    complete = zlib.decompressobj(31).decompress(path.read_bytes()).count(b"\n")
    warehouse = tmp_path / "w.duckdb"
    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    proc = subprocess.run([curate, "ingest", "--source", "arena", "--path", str(path), "--warehouse", str(warehouse),
                           "--batch-size", "25", "--json"], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith("CURATE_")})
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert "Traceback" not in proc.stderr and "busy" not in proc.stderr, proc.stderr
    assert len(lines) == 2 and lines[1].startswith("hint: "), proc.stderr
    assert lines[0].startswith(f"error: {path}: unreadable after line {complete:,}: the gzip stream ends before its "
                               "end marker"), proc.stderr
    assert f"the {complete:,} rows that could be read are in the warehouse" in lines[1]
    with Warehouse(warehouse, read_only=True) as wh:
        run = wh.runs.ingest_runs(1)[0]
        landed = sum(wh.query(f"SELECT count(*) FROM {t}")[0][0] for t in ("pair_sightings", "quarantine"))
    assert run["status"] == "failed" and run["error"].startswith("SourceDamagedError: ")
    assert json.loads(run["summary"])["read"] == complete and landed > complete * 0.9  # a duplicate line counts once
