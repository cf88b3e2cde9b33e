"""A warehouse whose storage, not its file, is the problem: a read-only filesystem, a file without write
permission, a disk that fills up mid-ingest. Each is named for what it is (never "not readable as a DuckDB
database"), in one line, and a full disk leaves the warehouse consistent for a rerun that resumes.

The storage is real: a read-only bind mount (`mount --bind` + `mount -o remount,ro,bind`), a small tmpfs
(`mount -t tmpfs -o size=...`) and, for permissions, a process without CAP_DAC_OVERRIDE (`setpriv`), since the
tests run as root, whom permission bits do not stop. Each test skips, saying why, where its mechanism is not
available.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from tasks.ingest.synth import write_synth
from warehouse.connection import (
    WarehouseDiskFullError,
    WarehouseReadOnlyError,
    WarehouseUnreadableError,
    _open_error,
    storage_error,
)
from warehouse.lock import pipeline_lock
from warehouse.store import Warehouse, WarehouseLockedError

CURATE = str(Path(sys.executable).with_name("curate"))
INGEST_TABLES = ("candidate_pairs", "pair_sightings", "quarantine", "near_duplicates", "pair_signatures",
                 "pair_band_keys", "contamination")


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True)


def _curate(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURATE_")}
    return subprocess.run([CURATE, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)


def _mount_or_skip(*args: str | Path, what: str) -> None:
    if shutil.which("mount") is None:
        pytest.skip(f"no `mount` command here: cannot make {what}")
    done = _run("mount", *args)
    if done.returncode:
        pytest.skip(f"cannot make {what} here (mount {' '.join(map(str, args))}: {done.stderr.strip()})")


def _unmount(path: Path) -> None:
    _run("umount", "-l", path)


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a writable folder, the same folder seen through a read-only bind mount)."""
    writable, read_only = tmp_path / "rw", tmp_path / "ro"
    writable.mkdir()
    read_only.mkdir()
    _mount_or_skip("--bind", writable, read_only, what="a bind mount")
    try:
        _mount_or_skip("-o", "remount,ro,bind", read_only, what="a read-only bind mount")
        yield writable, read_only
    finally:
        _unmount(read_only)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 6 MB tmpfs: a disk that fills up after a couple of ingest batches (grow it with `_grow`)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    _mount_or_skip("-t", "tmpfs", "-o", "size=6m", "tmpfs", disk, what="a small tmpfs")
    try:
        yield disk
    finally:
        _unmount(disk)


def _grow(disk: Path) -> None:
    done = _run("mount", "-o", "remount,size=200m", disk)
    assert done.returncode == 0, done.stderr


def _table_counts(path: Path) -> dict[str, int]:
    with Warehouse(path, read_only=True) as wh:
        counts = {t: wh.query(f"SELECT count(*) FROM {t}")[0][0] for t in INGEST_TABLES}
        counts["distinct pairs"] = wh.query("SELECT count(DISTINCT pair_id) FROM candidate_pairs")[0][0]
        counts["distinct sightings"] = wh.query(
            "SELECT count(DISTINCT (source, source_id, pair_id)) FROM pair_sightings")[0][0]
    return counts


# -- the messages, from the errors DuckDB and the OS give --------------------------------------------------


def test_storage_errors_are_told_apart_from_damage_and_locks() -> None:
    path = Path("/data/blocks/warehouse.duckdb")  # "lock" inside the path must not read as a lock
    read_only = _open_error(path, duckdb.IOException(f'IO Error: Cannot open file "{path}": Read-only file system'),
                            read_only=False)
    assert isinstance(read_only, WarehouseReadOnlyError)
    assert str(read_only).startswith(f"the warehouse {path} is on a read-only filesystem: commands that write")
    assert "curate status" in str(read_only) and "writable disk" in read_only.hint
    locked = duckdb.IOException(f'IO Error: Could not set lock on file "{path}": Conflicting lock is held in '
                                f"python (PID {os.getpid()})")
    assert isinstance(_open_error(path, locked, read_only=False), WarehouseLockedError)
    damaged = duckdb.IOException("IO Error: Could not read enough bytes from file: attempted to read 4096 bytes")
    assert isinstance(_open_error(path, damaged, read_only=False), WarehouseUnreadableError)

    full = storage_error(path, RuntimeError(
        f'TransactionContext Error: Failed to commit: Could not write file "{path}.wal": No space left on device'))
    assert isinstance(full, WarehouseDiskFullError)
    assert str(full).startswith(f"the disk holding the warehouse {path} is full (no space left on device "
                                f"writing {path}.wal)")
    quota = storage_error(path, OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), f"{path}.wal"))
    assert isinstance(quota, WarehouseDiskFullError) and "disk quota exceeded" in str(quota)

    denied = storage_error(path, OSError(f'IO Error: Cannot open file "{path}": Permission denied'))
    assert isinstance(denied, WarehouseReadOnlyError) and "not writable by this user" in str(denied)
    assert "cannot be read" in str(storage_error(path, OSError("Permission denied"), read_only=True))

    for other in ("IO Error: Could not read enough bytes from file: attempted to read 4096 bytes",
                  f'IO Error: Could not set lock on file "{path}": Conflicting lock is held in python (PID 7)'):
        assert storage_error(path, OSError(other)) is None


# -- a read-only filesystem ----------------------------------------------------------------------------------


def test_a_warehouse_on_a_read_only_filesystem_is_named_read_only_never_corrupt(read_only_mount) -> None:
    writable, read_only = read_only_mount
    with Warehouse(writable / "warehouse.duckdb") as wh:
        wh.runs.start_ingest_run("r1", "helpsteer3", "x.jsonl", "file:1", {})
    before = (writable / "warehouse.duckdb").read_bytes()
    path = read_only / "warehouse.duckdb"

    with pytest.raises(WarehouseReadOnlyError) as info:
        Warehouse(path)
    message = str(info.value)
    assert message.startswith(f"the warehouse {path} is on a read-only filesystem: commands that write need a "
                              "writable copy; `curate status` and the dashboard")
    assert not isinstance(info.value, (WarehouseUnreadableError, WarehouseLockedError))
    assert "not readable" not in message and "backup" not in message

    with Warehouse(path, read_only=True) as wh:  # a reader is fine
        assert wh.counts()["ingest_runs"] == 1
    for new in (read_only / "new.duckdb", read_only / "sub" / "new.duckdb"):  # nor can one be made there
        with pytest.raises(WarehouseReadOnlyError, match="read-only filesystem"):
            Warehouse(new)
    with pytest.raises(WarehouseReadOnlyError, match=r"read-only filesystem \(.*pipeline\.lock\)"):
        with pipeline_lock(path):
            pass
    assert (writable / "warehouse.duckdb").read_bytes() == before
    assert sorted(p.name for p in writable.iterdir()) == ["warehouse.duckdb"]


def test_curate_on_a_read_only_filesystem_says_so_in_one_line_and_status_reads_it(read_only_mount, tmp_path) -> None:
    writable, read_only = read_only_mount
    Warehouse(writable / "warehouse.duckdb").close()
    path = read_only / "warehouse.duckdb"
    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 10, seed=1, pair_bytes=300)

    proc = _curate("ingest", "--source", "helpsteer3", "--path", data, "--warehouse", path)

    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith(f"error: the warehouse {path} is on a read-only filesystem"), lines[0]
    assert lines[1].startswith("hint: copy the warehouse to a writable disk")
    status = _curate("status", "--warehouse", path, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["counts"]["candidate_pairs"] == 0


# -- no permission to write ----------------------------------------------------------------------------------


def test_a_warehouse_without_write_permission_is_named_not_writable(tmp_path: Path) -> None:
    folder = tmp_path / "locked-down"
    folder.mkdir()
    path = folder / "warehouse.duckdb"
    Warehouse(path).close()
    probe = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from warehouse.store import Warehouse
        try:
            Warehouse({str(path)!r}).close()
            print("opened for writing")
        except Exception as err:
            print(type(err).__name__, err)
        with Warehouse({str(path)!r}, read_only=True) as wh:
            print("read", wh.counts()["ingest_runs"])
    """)
    argv = [sys.executable, "-c", probe]
    if os.geteuid() == 0:  # root writes whatever the permission bits say, unless it lacks CAP_DAC_OVERRIDE
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without `setpriv`: permission bits cannot stop this process")
        argv = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *argv]
    path.chmod(0o444)
    folder.chmod(0o555)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    finally:
        folder.chmod(0o755)
        path.chmod(0o644)

    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.strip().splitlines()
    assert first.startswith(f"WarehouseReadOnlyError the warehouse {path} is not writable by this user"), first
    assert "permission denied" in first and "corrupt" not in first and "not readable" not in first
    assert second == "read 0"


# -- a disk that fills up during an ingest -------------------------------------------------------------------


@pytest.mark.prefect
def test_a_disk_filling_mid_ingest_ends_in_one_line_and_the_rerun_resumes_without_duplicates(small_disk, tmp_path):
    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 1500, seed=7, pair_bytes=6000)
    path = small_disk / "warehouse.duckdb"
    args = ("ingest", "--source", "helpsteer3", "--path", data, "--batch-size", "300", "--json")

    full = _curate(*args, "--warehouse", path)

    assert full.returncode == 2, full.stderr
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 2, full.stderr  # one line and its hint: no traceback, no logging errors
    assert lines[0].startswith(f"error: the disk holding the warehouse {path} is full (no space left on "
                               "device"), lines[0]
    assert lines[1].startswith("hint: free space on that disk")
    assert full.stdout == ""
    landed = _table_counts(path)  # a reader opens it as it is, on the full disk
    assert landed["candidate_pairs"] == landed["distinct pairs"]

    _grow(small_disk)  # space again
    resumed = _curate(*args, "--warehouse", path)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    reference = tmp_path / "reference.duckdb"
    clean = _curate(*args, "--warehouse", reference)
    assert clean.returncode == 0, clean.stderr

    assert 0 < landed["pair_sightings"] < _table_counts(reference)["pair_sightings"]  # it did stop part-way
    expected = _table_counts(reference)
    assert _table_counts(path) == expected  # everything landed, nothing twice
    # the rerun added only what had not landed: the rows that had were recognised as already ingested
    assert summary["already_ingested"] >= landed["pair_sightings"] > 0
    assert summary["new_pairs"] + summary["near_duplicates"] == expected["candidate_pairs"] - landed["candidate_pairs"]
    with Warehouse(path, read_only=True) as wh:
        statuses = [r["status"] for r in wh.runs.ingest_runs()]
    assert sorted(statuses) == ["completed", "failed"] or sorted(statuses) == ["completed", "interrupted"], statuses
