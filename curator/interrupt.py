"""Ctrl-C and SIGTERM stop a command that runs a flow in order, within seconds, in one line.

A terminal's Ctrl-C reaches the command alone (the servers it starts run in sessions of their own). On the
first SIGINT or SIGTERM the command prints nothing more of its own accord (`cli_logging.silence`) and the
flow unwinds: Prefect records the crash through its API, still up, and the flow closes the warehouse and any
judge server it started. Then the command marks the runs it leaves unfinished as interrupted, stops
Prefect's temporary API and its watchdog, prints one line and exits with 128 + the signal's number: 130 for
SIGINT, 143 for SIGTERM, as a shell reports a command a signal ended. (While a flow runs, Prefect's own
SIGTERM handler sees that signal first: it unwinds the flow, then hands the signal on to this one, so a run its
flow recorded as failed on the way is marked interrupted afterwards.)

A second signal, or an unwinding that takes longer than `GRACE` seconds, exits at once: the API is told to
stop, the watchdog stops whatever else the command started, and the next command that writes to the
warehouse marks a run left `running` as interrupted (`curate status` already shows it so).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

from common.processes import request_stop, stop_requested
from curator.cli_logging import silence

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE = 4.0  # seconds the flow has to unwind before the command leaves anyway
log = logging.getLogger("curator.stopping")


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by the first stop signal. A KeyboardInterrupt, so that asyncio leaves its loop
    at once and Prefect records a crash, as for the Ctrl-C it usually is."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(signum: int) -> int:
    return 128 + signum


def stopped_line(command: str, signum: int, marked: int | None, at_once: bool = False) -> str:
    """The one line a stopped command prints. `marked`: runs it marked interrupted (None: it could not)."""
    how = "" if signum == signal.SIGINT else f" ({signal.Signals(signum).name})"
    if at_once:
        runs = "a run it left unfinished shows as interrupted"
    elif marked is None:
        runs = "the next command marks its unfinished run interrupted"
    elif marked == 0:
        return f"interrupted: {command} stopped{how}; rerun to resume"
    else:
        runs = "its unfinished run is marked interrupted" if marked == 1 else \
            f"its {marked} unfinished runs are marked interrupted"
    return f"interrupted: {command} stopped{' at once' if at_once else ''}{how}; {runs}, rerun to resume"


def _leave(line: str, code: int, at_once: bool = False) -> None:
    """Print the line and exit now, without Python's exit handlers (Prefect's would flush logs and events to
    an API that is stopped or stopping). os.write: a signal handler or the timer's thread may run while the
    main thread holds sys.stderr's (or sys.stdout's) lock, so leaving at once flushes nothing."""
    if not at_once:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    # A progress bar that was never stopped hides the cursor and leaves it at the end of its line.
    prefix = "\x1b[?25h\n" if at_once and os.isatty(2) else ""
    try:
        os.write(2, f"{prefix}{line}\n".encode())
    except OSError:
        pass
    os._exit(code)


@contextmanager
def stoppable(command: str, in_order: Callable[[datetime], int | None], at_once: Callable[[], None]) -> Iterator[None]:
    """Run a command's body with the stop handlers above. On the first signal, once the body has unwound,
    `in_order(since)` stops what the command started and returns how many runs (started since `since`) it
    marked interrupted; on a second signal, or after `GRACE` seconds, `at_once()` tells what remains to stop
    without waiting."""
    since = datetime.now(timezone.utc).replace(tzinfo=None)  # the warehouse's clock: naive UTC
    leaving = threading.Lock()  # whoever takes it (the main thread, a second signal, the grace) prints and exits
    signalled, done = threading.Event(), threading.Event()

    def leave_at_once(signum: int) -> None:
        if leaving.acquire(blocking=False):
            try:
                at_once()
            finally:
                _leave(stopped_line(command, stop_requested() or signum, None, at_once=True), exit_code(signum),
                       at_once=True)

    def cut_short() -> None:
        # Started before any signal: a signal handler that started a thread could wait forever on a lock the
        # code it interrupted holds.
        signalled.wait()
        if not done.wait(GRACE) and (signum := stop_requested()) is not None:
            leave_at_once(signum)

    def handle(signum: int, frame: object) -> None:
        if stop_requested() is not None:
            leave_at_once(signum)
            return  # the grace's thread is leaving already
        request_stop(signum)
        silence()
        signalled.set()
        raise Interrupted(signum)

    threading.Thread(target=cut_short, name="curate-stop-grace", daemon=True).start()
    previous = {sig: signal.signal(sig, handle) for sig in SIGNALS}
    try:
        yield
    except BaseException:
        signum = stop_requested()
        if signum is None:
            raise
        # Whatever the unwinding raised instead (a cleanup meeting a half-done batch) is the stop's doing: it
        # went to the log file, and the user reads the one line.
        log.info("stopped by %s", signal.Signals(signum).name, exc_info=True)
        marked = in_order(since)
        if leaving.acquire(blocking=False):
            _leave(stopped_line(command, signum, marked), exit_code(signum))
        threading.Event().wait()  # another thread is leaving
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        done.set()
        signalled.set()
