"""Which process does a thing, whether a process of this host still runs, and whether this one was asked to
stop: how work left behind by a killed or interrupted process (a run row, a staging folder) is told from
work still going on, or from work that failed."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def this_process() -> tuple[int, str]:
    """(pid, host name) of this process."""
    return os.getpid(), socket.gethostname()


def process_alive(pid: int) -> bool:
    """Whether a process of this host with that pid still runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


# The signal this process is stopping on (Ctrl-C, SIGTERM), set by the command's handler before the work
# unwinds: a run that ends because of it was interrupted, not failed.
_stopping: list[int] = []


def request_stop(signum: int) -> None:
    """Record that this process was asked to stop by `signum`."""
    if not _stopping:
        _stopping.append(signum)


def stop_requested() -> int | None:
    """The signal this process was asked to stop by, or None."""
    return _stopping[0] if _stopping else None
