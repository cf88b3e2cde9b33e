"""Which process does a thing, and whether a process of this host still runs: how work left behind by a
killed process (a run row, a staging folder) is told from work still going on."""

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
