"""One pipeline run per warehouse at a time.

DuckDB's own lock protects a single connection, but a pipeline closes the warehouse while GPU workers judge,
and a second run starting in that gap would plan the same pairs again. So a pipeline run holds an OS file
lock beside the warehouse for its whole length; the lock dies with its process, so a killed run never
leaves it stale.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from common.errors import UserError


class PipelineBusyError(UserError, RuntimeError):
    """Another pipeline run holds this warehouse."""


def lock_path(warehouse: Path | str) -> Path:
    return Path(f"{warehouse}.pipeline.lock")


@contextmanager
def pipeline_lock(warehouse: Path | str, wait: float = 0.0, run_id: str | None = None) -> Iterator[None]:
    """Hold the warehouse's pipeline lock; wait up to `wait` seconds for it, then stop with who holds it."""
    path = lock_path(warehouse)
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = Path(f"{path}.holder")
    lock = FileLock(str(path), timeout=wait)
    try:
        lock.acquire()
    except Timeout:
        try:
            who = json.loads(holder.read_text())
            said = (f"pipeline run {who.get('run_id')} (pid {who.get('pid')} on {who.get('host')}, "
                    f"since {who.get('since')})")
        except (OSError, ValueError):
            said = "another pipeline run"
        raise PipelineBusyError(
            f"{said} is using the warehouse {warehouse}; this run stopped without changing anything"
            + (f" after waiting {wait:.0f} s" if wait else "")
            + ". Wait for it to finish, or set CURATE_PIPELINE_LOCK_WAIT to queue behind it."
        ) from None
    try:
        holder.write_text(json.dumps({"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
                                      "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
        yield
    finally:
        lock.release()
