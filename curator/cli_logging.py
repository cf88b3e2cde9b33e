"""What a person at a terminal sees while a command runs: warnings and the command's own lines on stderr;
Prefect's chatter, failure records and tracebacks in a log file (or on stderr with `--verbose`).

A failed run is reported by the CLI in one line (and at most one hint); the engine's own record of the
same failure ("Encountered exception...", "Finished in state Failed") with its traceback would bury it.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
import threading
import warnings
from pathlib import Path

# "Crash detected!": a run a signal ended; under SIGTERM Prefect's own handler records it before the command's
# handler has silenced the terminal (curator/interrupt.py).
_FAILURE_RECORDS = ("Encountered exception", "Finished in state Failed", "Finished in state Crashed",
                    "Process for flow run", "Execution of flow run", "Crash detected!")
# Prefect's own housekeeping, which says nothing about the user's data or command.
_HOUSEKEEPING = ("Still processing items",)


class TerminalFilter(logging.Filter):
    """Lets through warnings and errors that are news to the user, without tracebacks; nothing once the
    command is stopping (it says so itself, in one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _state["silenced"]:
            return False
        if _state["verbose"]:
            return True
        if record.levelno < logging.WARNING or record.exc_info:
            return False
        message = record.getMessage()
        if record.name.startswith("prefect._internal") or any(h in message for h in _HOUSEKEEPING):
            return False
        return not any(message.startswith(prefix) or prefix in message[:80] for prefix in _FAILURE_RECORDS)


_state: dict[str, object] = {"verbose": False, "file": None, "silenced": False}


def set_verbose(verbose: bool) -> None:
    """The command's `--verbose`, read by `quiet_terminal` once Prefect is about to run. Importing Prefect here
    would cost every command, a refusal included, about 1.5 s before it could say a word."""
    _state["verbose"] = verbose


def quiet_terminal() -> None:
    """Set up Prefect's logging and filter its console handler (with `--verbose`, only once the command stops).
    Called before the command first uses Prefect (`curator.runner`); a second call changes nothing."""
    from prefect.logging.configuration import PROCESS_LOGGING_CONFIG, setup_logging
    from prefect.logging.handlers import PrefectConsoleHandler

    if not PROCESS_LOGGING_CONFIG:
        setup_logging()  # now, so that later set-ups (the ephemeral server's) are incremental and keep the filter
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for handler in {h for lg in loggers for h in lg.handlers}:
        terminal = isinstance(handler, PrefectConsoleHandler) or (
            isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) in (sys.stderr, sys.stdout))
        if terminal and not any(isinstance(f, TerminalFilter) for f in handler.filters):
            handler.addFilter(TerminalFilter())


class _LogFile(logging.handlers.RotatingFileHandler):
    """The log file, quiet when it cannot be written (the disk beside the warehouse is full or read-only): the
    command's own error says so in one line, where the logging module would print a traceback per record."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass


def log_to_file(path: Path) -> Path | None:
    """Everything Prefect and this project log, tracebacks included, also goes to `path` (rotated)."""
    if _state["file"] is not None:
        return _state["file"]  # type: ignore[return-value]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _LogFile(path, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
    except OSError:
        return None  # a log file is a help, never a reason to fail
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s - %(message)s"))
    handler.setLevel(logging.INFO)
    # Prefect's loggers carry their own levels and propagate to the root's handlers.
    logging.getLogger().addHandler(handler)
    _state["file"] = path
    return path


def _drop(record: logging.LogRecord) -> bool:
    return False


def silence() -> None:
    """A stopping command prints nothing but its own line: the terminal handlers drop every record, Prefect
    stops logging to its API (whose server is about to stop), and warnings and exceptions of other threads
    go to the log file only. Safe to call from a signal handler: it only sets flags, filters and hooks."""
    _state["silenced"] = True
    logging.raiseExceptions = False  # a handler's failure (Prefect's log sender meeting a stopped API) says nothing
    handlers = {h for lg in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
                if isinstance(lg, logging.Logger) for h in lg.handlers}
    for handler in handlers:
        if type(handler).__name__ == "APILogHandler":  # Prefect's, found without importing Prefect
            handler.addFilter(_drop)
    log = logging.getLogger("curator.stopping")
    log.setLevel(logging.INFO)  # for the log file, whatever level the root logger has
    warnings.simplefilter("ignore")
    threading.excepthook = lambda args: log.info("in thread %s", args.thread, exc_info=(
        args.exc_type, args.exc_value, args.exc_traceback))
    sys.unraisablehook = lambda u: log.info("unraisable %r", u.object, exc_info=(
        u.exc_type, u.exc_value, u.exc_traceback))


def verbose() -> bool:
    return bool(_state["verbose"])


def log_file() -> Path | None:
    return _state["file"]  # type: ignore[return-value]
