"""One pipeline run per warehouse at a time.

DuckDB's own lock protects a single connection, but a pipeline closes the warehouse while GPU workers judge,
and a second run starting in that gap would plan the same pairs again. So a pipeline run holds an OS file
lock beside the warehouse for its whole length; the lock dies with its process, so a killed run never
leaves it stale. A lock file that cannot be made (a read-only or full disk) is the warehouse's own one-line error,
as opening the warehouse would give.
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
from warehouse.connection import storage_error


class PipelineBusyError(UserError, RuntimeError):
    """Another pipeline run holds this warehouse."""


def lock_path(warehouse: Path | str) -> Path:
    return Path(f"{warehouse}.pipeline.lock")


@contextmanager
def pipeline_lock(warehouse: Path | str, wait: float = 0.0, run_id: str | None = None) -> Iterator[None]:
    """Hold the warehouse's pipeline lock; wait up to `wait` seconds for it, then stop with who holds it."""
    path = lock_path(warehouse)
    holder = Path(f"{path}.holder")
    lock = FileLock(str(path), timeout=wait)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout:  # before OSError: filelock's Timeout is one
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
    except OSError as err:
        raise _storage(warehouse, err) from None
    try:
        try:
            holder.write_text(json.dumps({"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
                                          "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
        except OSError as err:
            raise _storage(warehouse, err) from None
        yield
    finally:
        lock.release()


def _storage(warehouse: Path | str, err: OSError) -> Exception:
    """A read-only, unwritable or full disk named as such; any other OSError as it was."""
    return storage_error(Path(warehouse), err) or err
