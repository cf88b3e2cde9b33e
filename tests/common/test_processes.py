"""stop_process with real child processes: one that exits on SIGTERM, one that ignores it, process groups, a
process already gone, and one that outlives the SIGKILL wait."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from common.processes import process_alive, signal_process, stop_process

IGNORE_TERM = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
READY = "print('ready', flush=True); "
SLEEP = "import time; time.sleep(60)"
# a group leader that starts a child sleeping in its group, says the child's pid, then sleeps too
LEADER = ("import subprocess, sys, time; "
          "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
          "print(child.pid, flush=True); time.sleep(60)")


@pytest.fixture
def spawn():
    started: list[subprocess.Popen] = []
    strays: list[int] = []

    def start(code: str, new_session: bool = False) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                                start_new_session=new_session)
        started.append(proc)
        return proc

    yield start, strays
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
    for pid in strays:
        if process_alive(pid):
            signal_process(pid, signal.SIGKILL)


def _ready(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline().strip()
    assert line, f"the child said nothing (exit code {proc.poll()})"
    return line


def test_a_process_that_exits_on_sigterm_is_not_killed(spawn):
    start, _ = spawn
    proc = start(READY + SLEEP)
    _ready(proc)
    began = time.monotonic()
    assert stop_process(proc, wait=30) == -signal.SIGTERM
    assert time.monotonic() - began < 10  # it did not wait out the 30 s


def test_a_process_that_ignores_sigterm_is_killed_after_the_wait(spawn):
    start, _ = spawn
    proc = start(IGNORE_TERM + READY + SLEEP)
    _ready(proc)
    began = time.monotonic()
    assert stop_process(proc, wait=0.5) == -signal.SIGKILL
    assert time.monotonic() - began >= 0.5


def test_a_process_already_gone_keeps_its_exit_code(spawn):
    start, _ = spawn
    proc = start("import sys; sys.exit(3)")
    proc.wait(30)
    assert stop_process(proc, wait=0.1) == 3


def test_a_group_is_stopped_with_its_leader(spawn):
    start, strays = spawn
    leader = start(IGNORE_TERM + LEADER, new_session=True)
    child = int(_ready(leader))
    strays.append(child)
    assert stop_process(leader, wait=0.5, group=True) == -signal.SIGKILL  # the leader ignored SIGTERM
    deadline = time.monotonic() + 10
    while process_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(child), "the child in the leader's group was left running"


def test_without_group_only_the_process_itself_is_stopped(spawn):
    start, strays = spawn
    leader = start(LEADER, new_session=True)
    child = int(_ready(leader))
    strays.append(child)
    assert stop_process(leader, wait=10) == -signal.SIGTERM
    time.sleep(0.2)
    assert process_alive(child)
    assert signal_process(child, signal.SIGKILL)
    strays.remove(child)


def test_a_process_that_outlives_the_kill_wait_gives_none(spawn):
    start, _ = spawn
    real = start(IGNORE_TERM + READY + SLEEP)
    _ready(real)

    class Stuck:  # a handle whose process never seems to exit: every wait times out
        pid = real.pid
        returncode = None

        def poll(self):
            return None

        def wait(self, timeout=None):
            raise subprocess.TimeoutExpired("stuck", timeout)

    assert stop_process(Stuck(), wait=0.1, kill_wait=0.1) is None
    assert real.wait(10) == -signal.SIGKILL  # it was sent SIGKILL all the same


def test_signal_process_says_when_there_is_nothing_to_signal(spawn):
    start, _ = spawn
    proc = start("pass")
    proc.wait(30)
    # reaped: no such process or group (signal 0 only asks, should the pid have been reused since)
    assert not signal_process(proc.pid, 0)
    assert not signal_process(proc.pid, 0, group=True)
    assert signal_process(os.getpid(), 0)
