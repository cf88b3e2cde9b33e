"""One pipeline run per warehouse: a second one stops with who holds it, or waits when told to."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from warehouse.lock import PipelineBusyError, pipeline_lock


def _holder(path, seconds):
    code = textwrap.dedent(f"""
        import time
        from warehouse.lock import pipeline_lock
        with pipeline_lock({str(path)!r}, run_id="run-one"):
            print("held", flush=True)
            time.sleep({seconds})
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_stops_and_names_the_first(warehouse_path):
    proc = _holder(warehouse_path, 30)
    try:
        with pytest.raises(PipelineBusyError, match=r"pipeline run run-one \(pid \d+ .*stopped without changing"):
            with pipeline_lock(warehouse_path):
                pass
    finally:
        proc.kill()
        proc.wait()
    with pipeline_lock(warehouse_path):  # a killed holder leaves no stale lock
        pass


def test_a_second_run_can_wait_for_the_first(warehouse_path):
    proc = _holder(warehouse_path, 1.5)
    started = time.monotonic()
    with pipeline_lock(warehouse_path, wait=30):
        waited = time.monotonic() - started
    proc.wait()
    assert 0.5 < waited < 30
