"""Prefect's temporary API for a command that runs a flow where no Prefect server is configured.

Prefect would start the same server (uvicorn over `prefect.server.api.server:create_app`) itself on the
first API call, after importing its server code into this process first (about 2.5 CPU-s). Started here
instead, as soon as a command knows it will run a flow, it boots in its own process while this one imports
the flow's modules and checks its inputs, and this process never loads the server's code.

It runs in a session of its own: a Ctrl-C at the terminal reaches the command alone, which stops its flow
first (recording the crash through this API) and the server after; the server dying first under the same
Ctrl-C left the command retrying its logs against a dead API for minutes. If the command is killed, its
watchdog (`curator.watchdog`) stops the server.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from common.processes import signal_process, stop_process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TemporaryApi:
    """One temporary Prefect API server for this command; stopped when the command exits."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.port = 0
        self._ready = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self) -> TemporaryApi:
        spec = importlib.util.find_spec("prefect")  # the package's folder, without importing it
        assert spec is not None and spec.origin is not None
        self.port = _free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--app-dir", str(Path(spec.origin).parent.parent), "--factory",
             "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(self.port),
             "--log-level", "error", "--lifespan", "on"],
            env={**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                 "PREFECT__SERVER_FINAL": "1"},
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        atexit.register(self.stop)  # registered before Prefect's own exit handlers: runs after they flush logs
        return self

    def wait_ready(self, timeout: float) -> str:
        """The API's URL once it answers; restarts once on another port if this one was taken."""
        assert self.process is not None
        deadline, restarted = time.monotonic() + timeout, False
        with httpx.Client(timeout=2) as client:
            while not self._ready:
                if self.process.poll() is not None:
                    if restarted:
                        raise RuntimeError("Prefect's temporary API server exited with code "
                                           f"{self.process.returncode}: {self.process.stderr.read()[-2000:]!r}")
                    restarted = True
                    self.start()
                try:
                    self._ready = client.get(f"{self.url}/health").status_code == 200
                except httpx.HTTPError:
                    pass
                if not self._ready:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"Prefect's temporary API server did not answer within {timeout:g} s "
                                           "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)")
                    time.sleep(0.05)
        return self.url

    def stop(self, wait: float = 10) -> None:
        if self.process is not None:
            stop_process(self.process, wait)
        self.process = None

    def kill_now(self) -> None:
        """Stop the server without waiting (a second Ctrl-C: the command is leaving at once)."""
        if self.process is not None and self.process.poll() is None:
            signal_process(self.process.pid, signal.SIGTERM, group=True)


@functools.cache
def temporary_api() -> TemporaryApi:
    """This process's one temporary API, started on first use and stopped when the process exits: the commands
    one process runs (a test's, say) share it, as they share Prefect's client settings."""
    return TemporaryApi().start()
