"""A command killed with SIGKILL cannot stop what it started: Prefect's temporary API server, a stand-in.
This watchdog, a separate small process, notes the command's child processes while it runs and, once the
command is gone however it ended, stops those still running (only the very processes it saw: a pid reused
by another process since is left alone). Linux only (/proc); elsewhere nothing is started."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from common.processes import signal_process


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _children(parent: int) -> dict[int, tuple[str, int]]:
    """{pid: (start time, process group)} of the processes whose parent is `parent`."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields and int(fields[1]) == parent:
                found[int(entry)] = (fields[19], int(fields[2]))
    return found


def watch(parent: int, interval: float = 0.5) -> None:
    seen: dict[int, tuple[str, int]] = {}
    while True:
        fields = _stat(parent)
        if fields is None or fields[0] == "Z":
            break
        seen.update(_children(parent))
        time.sleep(interval)
    seen.pop(os.getpid(), None)  # the watchdog is one of the command's children too
    for pid, (started, group) in seen.items():
        fields = _stat(pid)
        if fields is None or fields[19] != started:
            continue  # gone already, or the pid now belongs to another process
        # one that leads its own group (a server started with its workers) is stopped with all of them
        signal_process(pid, signal.SIGTERM, group=group == pid)


@functools.cache
def start_watchdog() -> subprocess.Popen | None:
    """Watch this process (one watchdog a process, started on first use); returns the watchdog (it exits by itself
    once this process is gone)."""
    if not Path("/proc/self/stat").exists():
        return None
    return subprocess.Popen([sys.executable, "-m", "curator.watchdog", str(os.getpid())], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


if __name__ == "__main__":
    watch(int(sys.argv[1]))
