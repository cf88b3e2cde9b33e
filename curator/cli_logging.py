"""What a person at a terminal sees while a command runs: warnings and the command's own lines on stderr;
Prefect's chatter, failure records and tracebacks in a log file (or on stderr with `--verbose`).

A failed run is reported by the CLI in one line (and at most one hint); the engine's own record of the
same failure ("Encountered exception...", "Finished in state Failed") with its traceback would bury it.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from pathlib import Path

_FAILURE_RECORDS = ("Encountered exception", "Finished in state Failed", "Finished in state Crashed",
                    "Process for flow run", "Execution of flow run")
# Prefect's own housekeeping, which says nothing about the user's data or command.
_HOUSEKEEPING = ("Still processing items",)


class TerminalFilter(logging.Filter):
    """Lets through warnings and errors that are news to the user, without tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or record.exc_info:
            return False
        message = record.getMessage()
        if record.name.startswith("prefect._internal") or any(h in message for h in _HOUSEKEEPING):
            return False
        return not any(message.startswith(prefix) or prefix in message[:80] for prefix in _FAILURE_RECORDS)


_state: dict[str, object] = {"verbose": False, "file": None}


def quiet_terminal(verbose: bool) -> None:
    """Filter Prefect's console handler (unless `verbose`); call once Prefect is imported."""
    from prefect.logging.configuration import PROCESS_LOGGING_CONFIG, setup_logging
    from prefect.logging.handlers import PrefectConsoleHandler

    _state["verbose"] = verbose
    if verbose:
        return
    if not PROCESS_LOGGING_CONFIG:
        setup_logging()  # now, so that later set-ups (the ephemeral server's) are incremental and keep the filter
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for handler in {h for lg in loggers for h in lg.handlers}:
        terminal = isinstance(handler, PrefectConsoleHandler) or (
            isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) in (sys.stderr, sys.stdout))
        if terminal and not any(isinstance(f, TerminalFilter) for f in handler.filters):
            handler.addFilter(TerminalFilter())


def log_to_file(path: Path) -> Path | None:
    """Everything Prefect and this project log, tracebacks included, also goes to `path` (rotated)."""
    if _state["file"] is not None:
        return _state["file"]  # type: ignore[return-value]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
    except OSError:
        return None  # a log file is a help, never a reason to fail
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s - %(message)s"))
    handler.setLevel(logging.INFO)
    # Prefect's loggers carry their own levels and propagate to the root's handlers.
    logging.getLogger().addHandler(handler)
    _state["file"] = path
    return path


def verbose() -> bool:
    return bool(_state["verbose"])


def log_file() -> Path | None:
    return _state["file"]  # type: ignore[return-value]
