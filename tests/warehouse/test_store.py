import subprocess
import sys
import time

import pyarrow as pa
import pytest

from warehouse.store import Warehouse, WarehouseLockedError, migrations


def test_migrations_apply_once_in_order(warehouse_path):
    versions = [v for v, _, _ in migrations()]
    assert versions == sorted(versions) and versions[0] == 1
    with Warehouse(warehouse_path) as wh:
        assert wh.schema_version() == versions[-1]
        assert wh.migrate() == []  # nothing left to apply
        assert wh.counts()["candidate_pairs"] == 0


def test_lock_held_by_another_process_is_named(warehouse_path):
    Warehouse(warehouse_path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(warehouse_path)!r}); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(WarehouseLockedError) as info:
            Warehouse(warehouse_path)
        message = str(info.value)
        assert f"process {holder.pid}" in message and "one writer" in message
        with pytest.raises(WarehouseLockedError):
            Warehouse(warehouse_path, read_only=True)
    finally:
        holder.kill()
        holder.wait(10)
    deadline = time.time() + 10
    while True:  # the lock goes with the process
        try:
            Warehouse(warehouse_path).close()
            break
        except WarehouseLockedError:
            assert time.time() < deadline
            time.sleep(0.1)


def test_batch_write_is_all_or_nothing(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        good = pa.table({"pair_id": ["p1"], "kept_pair_id": ["p0"], "similarity": [0.9], "ingest_run_id": ["r"]})
        bad = pa.table({"pair_id": ["p1"], "num_perm": pa.array([None], pa.int32()), "signature": pa.array([b"x"], pa.binary())})
        with pytest.raises(Exception):
            wh.ingest.write_ingest_batch(pairs=None, sightings=None, quarantine=None, near_duplicates=good, signatures=bad,
                                  contamination=None)
        assert wh.counts()["near_duplicates"] == 0  # the first insert was rolled back with the failing one


def test_source_pins(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        assert wh.ingest.source_pin("helpsteer3") is None
        wh.ingest.set_source_pin("helpsteer3", "nvidia/HelpSteer3", "a" * 40)
        wh.ingest.set_source_pin("helpsteer3", "nvidia/HelpSteer3", "b" * 40)
        assert wh.ingest.source_pin("helpsteer3") == "b" * 40


def test_read_only_needs_an_existing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="curate ingest"):
        Warehouse(tmp_path / "none.duckdb", read_only=True)


def test_duckdb_memory_is_bounded_by_the_setting_and_a_bad_value_is_refused(warehouse_path, monkeypatch):
    from common.errors import InvalidInputError
    from common.settings import get_settings

    monkeypatch.setenv("CURATE_WAREHOUSE_MEMORY_LIMIT", "256MB")
    get_settings.cache_clear()
    try:
        with Warehouse(warehouse_path) as wh:
            limit = wh.query("SELECT current_setting('memory_limit')")[0][0]
        assert limit.replace(" ", "") in ("256.0MiB", "244.1MiB", "256MiB", "244MiB"), limit
        monkeypatch.setenv("CURATE_WAREHOUSE_MEMORY_LIMIT", "lots")
        get_settings.cache_clear()
        with pytest.raises(InvalidInputError, match="CURATE_WAREHOUSE_MEMORY_LIMIT"):
            Warehouse(warehouse_path)
    finally:
        monkeypatch.delenv("CURATE_WAREHOUSE_MEMORY_LIMIT")
        get_settings.cache_clear()


def _pairs(ids: list[str]) -> pa.Table:
    from datetime import datetime

    from schemas.pair import CANDIDATE_PAIR_SCHEMA

    n = len(ids)
    return pa.table({
        "pair_id": ids, "source": ["s"] * n, "source_id": ids, "source_revision": ["r"] * n,
        "history": [[{"role": "user", "content": "q"}]] * n, "response_a": ["a"] * n, "response_b": ["b"] * n,
        "human_label": [None] * n, "raw_label": [None] * n, "both_bad": [False] * n, "domain": [None] * n,
        "language": [None] * n, "metadata": ["{}"] * n, "est_tokens": [1] * n, "ingest_run_id": ["run"] * n,
        "ingested_at": [datetime(2026, 1, 1)] * n, "prompt_tokens": [9] * n, "response_a_tokens": [9] * n,
        "response_b_tokens": [9] * n,
    }, schema=CANDIDATE_PAIR_SCHEMA)


def test_an_ingest_checkpoints_per_row_group_and_at_the_end(warehouse_path, monkeypatch):
    import warehouse.ingest as ingest_store

    monkeypatch.setattr(ingest_store, "ROW_GROUP_ROWS", 4)
    wal = warehouse_path.with_name(warehouse_path.name + ".wal")

    def write(wh, ids):
        wh.ingest.write_ingest_batch(pairs=_pairs(ids), sightings=None, quarantine=None, near_duplicates=None,
                              signatures=None, contamination=None)

    def threshold(wh):
        return wh.query("SELECT current_setting('checkpoint_threshold')")[0][0]

    with Warehouse(warehouse_path) as wh:
        default = threshold(wh)
        write(wh, ["p0"])  # an earlier run's pair: the table's last row group holds one
        wh.query("CHECKPOINT")
        with wh.ingest.checkpoints_per_row_group():
            assert threshold(wh) != default  # no checkpoint by WAL size meanwhile
            write(wh, ["p1", "p2"])
            assert wal.stat().st_size > 0  # 3 of 4 rows: not checkpointed yet
            write(wh, ["p3", "p4"])
            assert not wal.exists() or wal.stat().st_size == 0  # the row group is full: checkpointed
            write(wh, ["p5"])
            assert wal.stat().st_size > 0
            wh.ingest._pair_bytes_budget = 1  # as if the pairs since the last checkpoint filled memory_limit
            write(wh, ["p6"])
            assert not wal.exists() or wal.stat().st_size == 0
            write(wh, ["p7"])
        assert not wal.exists() or wal.stat().st_size == 0  # and once at the end
        assert threshold(wh) == default
        assert wh.counts()["candidate_pairs"] == 8


def test_duckdb_sizes_are_read_as_bytes():
    from warehouse.ingest import _bytes

    assert _bytes("953.6 MiB") == int(953.6 * 2**20)
    assert _bytes("1.0 GiB") == 2**30 and _bytes("0 bytes") == 0 and _bytes("2 GB") == 2 * 10**9
    with pytest.raises(ValueError):
        _bytes("unlimited")
