"""What every command goes through between its flags and its flow: settings from flags, errors a user can act on
as one line (exit 2), the answer of a call with nothing to do, Prefect's API (a temporary one, started early, or
the configured server), the watchdog that stops what a killed command started, and Ctrl-C / SIGTERM in order.

A command that runs a flow holds one `Runner` for its whole life:

    with Runner("ingest") as runner:
        run = guarded(IngestRun.of, ...)             # refusals: one line, exit 2
        summary = runner.noop(ingest_noop, run)      # nothing to do: answered before Prefect starts
        if summary is None:
            summary = runner.flow(ingest_flow, source=..., path=...)   # by keyword, always

The runner holds the process's temporary API and watchdog (`prefect_api.temporary_api`, `watchdog.start_watchdog`:
one each a process, started on first use); leaving the block normally leaves the API to stop at exit, after
Prefect has flushed its logs; a stop signal stops both in order (`curator.interrupt`).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import typer

from curator.output import err


def apply_flags(warehouse: Path | None = None, **settings: Any) -> None:
    """Flags become settings (CURATE_* variables) for this process and the flows it runs; a CURATE_* value out of
    its bounds is one line naming it, before anything starts."""
    from common.settings import get_settings

    given = {k: v for k, v in {"warehouse": warehouse, **settings}.items() if v not in (None, False)}
    for name, value in given.items():
        os.environ[f"CURATE_{name.upper()}"] = "true" if value is True else str(value)
    if given:
        get_settings.cache_clear()
    guarded(get_settings)


def is_user_error(e: BaseException) -> bool:
    from common.errors import UserError

    # DuckDB finding a damaged page mid-command (a truncated file a reader could open) names the file.
    damaged = type(e).__name__ == "IOException" and "Could not read enough bytes" in str(e)
    return isinstance(e, UserError) or damaged


def fail(message: str, hint: str | None = None) -> NoReturn:
    """One line on stderr (and at most one hint), exit code 2."""
    from rich.markup import escape

    from common.errors import shown

    err.print(f"[bold red]error:[/] {escape(shown(message))}", soft_wrap=True, highlight=False, markup=True)
    if hint:
        err.print(f"hint: {shown(hint)}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def guarded(fn, *args: Any, **kwargs: Any) -> Any:
    """Call `fn`; an error a user can act on becomes one clear line and exit code 2 (a stopping command says one
    thing only: its stop line). Anything else is a bug and keeps its traceback."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        from common.processes import stop_requested

        if is_user_error(e) and stop_requested() is None:
            fail(str(e), getattr(e, "hint", None))
        raise


class Runner:
    """One command's flow runs: see the module's notes."""

    def __init__(self, command: str):
        self.command = command
        self.api = None  # curator.prefect_api.TemporaryApi, once started
        self.watchdog = None  # the watchdog process, once started
        self._stop = None

    def __enter__(self) -> Runner:
        from curator.interrupt import stoppable

        self._stop = stoppable(self.command, self._stop_in_order, self._stop_at_once)
        self._stop.__enter__()
        return self

    def __exit__(self, *exc: Any) -> bool | None:
        return self._stop.__exit__(*exc)

    # -- Prefect's API -------------------------------------------------------------------------------------
    def start_api(self) -> None:
        """Start Prefect's temporary API now (no server configured), so that its start-up overlaps what the
        command does before its flow runs; `flow` waits for it."""
        from curator.cli_logging import quiet_terminal
        from curator.noop import prefect_server_configured
        from curator.watchdog import start_watchdog

        quiet_terminal()  # before Prefect's first log record
        if self.api is not None or prefect_server_configured():
            return
        from curator.prefect_api import temporary_api

        self.watchdog = start_watchdog()
        self.api = temporary_api()

    def noop(self, answer, *args: Any) -> Any | None:
        """The answer of a call with nothing to do, found without starting Prefect; None when there is work (or
        a Prefect server is configured: then every call is a flow run there). With work, the API starts now."""
        from curator.noop import prefect_server_configured

        if prefect_server_configured():
            return None
        found = guarded(answer, *args)
        if found is None:
            self.start_api()  # a flow will run: its API boots while the flow's modules are imported
        return found

    def flow(self, fn, **parameters: Any) -> Any:
        """Run a flow, its parameters by keyword, on the configured Prefect server or the temporary API; errors a
        user can act on become one line and exit 2, Prefect's logs go to the log file."""
        from common.settings import get_settings
        from curator.cli_logging import log_to_file, quiet_terminal
        from curator.watchdog import start_watchdog

        quiet_terminal()  # before the log file joins the root logger: Prefect's first set-up replaces its handlers
        log_to_file(Path(get_settings().warehouse).parent / "logs" / "curate.log")
        self.watchdog = start_watchdog()  # stops the temporary API if this process is SIGKILLed
        self.start_api()
        if self.api is None:
            return guarded(fn, **parameters)
        from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

        # No heartbeats to a server that ends with this command: nothing would read them, and a flow's end waits
        # up to a second for the heartbeat thread.
        timeout = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120"))
        with temporary_settings({PREFECT_API_URL: guarded(self.api.wait_ready, timeout),
                                 PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            return guarded(fn, **parameters)

    # -- stopping --------------------------------------------------------------------------------------------
    def _stop_in_order(self, since: datetime) -> int | None:
        """After a stop signal, once the flow has unwound: mark the runs this command leaves unfinished as
        interrupted, then stop Prefect's temporary API and the watchdog. Returns how many runs were marked
        (None: the warehouse could not be opened)."""
        import logging

        from common.settings import get_settings
        from warehouse.store import Warehouse

        marked: int | None = 0
        try:
            if Path(get_settings().warehouse).exists():
                with Warehouse(get_settings().warehouse) as wh:
                    marked = wh.runs.mark_own_runs_interrupted(since)
        except Exception:
            logging.getLogger("curator.stopping").info("marking interrupted runs failed", exc_info=True)
            marked = None
        if self.api is not None:
            self.api.stop(wait=3)
        if self.watchdog is not None and self.watchdog.poll() is None:
            self.watchdog.terminate()  # nothing is left for it to stop
        return marked

    def _stop_at_once(self) -> None:
        """A second stop signal: tell the API to stop and leave; the watchdog stops the rest once we are gone."""
        if self.api is not None:
            self.api.kill_now()


def runs_flows(command: str):
    """A command that runs flows gets its `Runner` as the argument `runner` (not a flag), entered around its whole
    body: Ctrl-C or SIGTERM stops it in order, in one line."""
    import functools
    import inspect

    def wrap(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def run_command(*args: Any, **kwargs: Any) -> Any:
            with Runner(command) as runner:
                return fn(*args, runner=runner, **kwargs)

        run_command.__signature__ = signature.replace(
            parameters=[p for p in signature.parameters.values() if p.name != "runner"])
        return run_command

    return wrap
