"""Label Studio started for the tests, and a data folder migrated beforehand for it to start from.

`running(python, folder, env)` starts a Label Studio on 127.0.0.1 in `folder` (its database in `folder/base`), waits
until it answers and stops it with its session when the block ends. `make_base(out)` makes a folder with the
database created and migrated and no user in it, for the session's Label Studio (tests/flows/conftest.py) to start
from a copy of: a start on a new folder spends about 30 s migrating, on a migrated one about 3 s. Standard library
only: `.ci/run` runs this file with Label Studio's own python, beside the other installs:

    python tests/label_studio_base.py OUT    # OUT/base is the folder; CURATE_TEST_LABEL_STUDIO_BASE names it
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

# nothing leaves 127.0.0.1: no version check, no analytics, no error reporting
QUIET = {"LABEL_STUDIO_LATEST_VERSION_CHECK": "false", "LABEL_STUDIO_COLLECT_ANALYTICS": "false",
         "LABEL_STUDIO_SENTRY_DSN": "", "LABEL_STUDIO_FRONTEND_SENTRY_DSN": ""}


@contextlib.contextmanager
def running(python: str, folder: Path, env: dict[str, str], timeout: float = 300) -> Iterator[str]:
    """The URL of a Label Studio started from `python` with `env` (plus QUIET and its base folder), once it answers;
    stopped by its process group when the block ends."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**env, **QUIET, "LABEL_STUDIO_BASE_DATA_DIR": str(folder / "base")}
    url = f"http://127.0.0.1:{port}"
    with open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen([python, "-m", "label_studio.server", "start", "--no-browser", "--host", "127.0.0.1",
                                 "--port", str(port), "--data-dir", str(folder / "data")],
                                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=folder, start_new_session=True)
        try:
            deadline = time.time() + timeout
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                        if b"UP" in r.read():
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"Label Studio did not start (exit {proc.poll()}); see {folder / 'server.log'}")
                time.sleep(0.5)
            yield url
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # its session: the server and anything it started
            except ProcessLookupError:
                pass
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def make_base(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    # no LABEL_STUDIO_USERNAME: the session's start makes its user and token itself
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABEL_STUDIO_")}
    with running(sys.executable, out, env):
        pass
    return out / "base"


if __name__ == "__main__":
    print(make_base(Path(sys.argv[1]).resolve()))
