"""Publishing to a folder: a publish killed half-way leaves nothing the next one does not clean up, and a
target that runs through a file is refused before anything is written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tasks.publish.layout import PublishTargetError, check_folder_target, remove_stale_staging, write_atomically

REPO = Path(__file__).resolve().parents[3]


def test_a_publish_killed_mid_write_leaves_staging_that_the_next_publish_removes(tmp_path):
    parent = tmp_path / "published" / "prefs"
    code = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from tasks.publish.layout import write_atomically

        def fill(folder):
            (folder / "data").mkdir()
            (folder / "data" / "train-00000.parquet").write_bytes(b"PAR1 partial")
            print("filling", flush=True)
            time.sleep(600)

        write_atomically(Path({str(parent / "v1-abc")!r}), fill)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "filling"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    left = [p.name for p in parent.iterdir()]
    assert len(left) == 1 and left[0].startswith(".v1-abc.staging-")  # hidden, partial, never renamed

    # a staging folder of a live process (this one) is never touched
    busy = parent / f".v2-def.staging-{os.uname().nodename}-{os.getpid()}-x1"
    busy.mkdir()
    write_atomically(parent / "v3-123", lambda folder: (folder / "README.md").write_text("card"))
    assert sorted(p.name for p in parent.iterdir()) == sorted([busy.name, "v3-123"])

    # one of another host is removed only once abandoned for a day
    other = parent / ".v4-aaa.staging-some-other-host-123-zz9"
    other.mkdir()
    assert remove_stale_staging(parent) == [] and other.exists()
    old = time.time() - 2 * 24 * 3600
    os.utime(other, (old, old))
    assert remove_stale_staging(parent) == [other.name] and not other.exists()


def test_a_target_inside_a_regular_file_is_refused(tmp_path):
    regular = tmp_path / "notes.txt"
    regular.write_text("a file")
    with pytest.raises(PublishTargetError, match="notes.txt is a file, not a folder"):
        check_folder_target(regular / "prefs" / "v1-abc")
    check_folder_target(tmp_path / "new" / "prefs" / "v1-abc")  # a folder still to be made is fine
