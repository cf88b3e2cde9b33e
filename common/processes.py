"""Which process does a thing, whether a process of this host still runs, and whether this one was asked to
stop: how work left behind by a killed or interrupted process (a run row, a staging folder) is told from
work still going on, or from work that failed. And how a child process is stopped: SIGTERM, a wait, then
SIGKILL (`stop_process`), to it alone or to the process group it leads."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
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


def signal_process(pid: int, signum: int = signal.SIGTERM, *, group: bool = False) -> bool:
    """Send `signum` to the process `pid`, or with `group` to the process group it leads (a child started with
    `start_new_session=True`, and whatever it spawned). False when there is no such process or group any more,
    or it is not this user's to signal."""
    try:
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except OSError:
        return False
    return True


def stop_process(proc: subprocess.Popen, wait: float, *, group: bool = False,
                 kill_wait: float | None = None) -> int | None:
    """Stop a child process: SIGTERM, up to `wait` seconds for it to exit, then SIGKILL and up to `kill_wait`
    seconds more (None: as long as it takes). With `group` both signals go to the process group it leads.
    Returns its exit code (negative: the signal that ended it), or None when it still runs after the SIGKILL
    wait. A process that has already exited is not signalled: its exit code is returned."""
    if proc.poll() is not None:
        return proc.returncode
    signal_process(proc.pid, signal.SIGTERM, group=group)  # not reaped yet, so the pid is still this child's
    try:
        return proc.wait(wait)
    except subprocess.TimeoutExpired:
        pass
    signal_process(proc.pid, signal.SIGKILL, group=group)
    try:
        return proc.wait(kill_wait)
    except subprocess.TimeoutExpired:
        return None
