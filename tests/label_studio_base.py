"""Make a Label Studio data folder with its database created and migrated and no user in it, for the session's
Label Studio (tests/flows/conftest.py) to start from a copy of: a start on a new folder spends about 30 s
migrating, on a migrated one about 3 s. Run by Label Studio's own python (standard library only), as `.ci/run`
does beside the other installs:

    python tests/label_studio_base.py OUT    # OUT/base is the folder; CURATE_TEST_LABEL_STUDIO_BASE names it
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def make_base(out: Path, timeout: float = 300) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # no LABEL_STUDIO_USERNAME: the session's start makes its user and token itself
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABEL_STUDIO_")}
    env.update(LABEL_STUDIO_BASE_DATA_DIR=str(out / "base"), LABEL_STUDIO_LATEST_VERSION_CHECK="false",
               LABEL_STUDIO_COLLECT_ANALYTICS="false", LABEL_STUDIO_SENTRY_DSN="", LABEL_STUDIO_FRONTEND_SENTRY_DSN="")
    with open(out / "server.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "label_studio.server", "start", "--no-browser", "--host",
                                 "127.0.0.1", "--port", str(port), "--data-dir", str(out / "data")],
                                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=out, start_new_session=True)
        try:
            deadline = time.time() + timeout
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                        if b"UP" in r.read():
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"Label Studio did not start (exit {proc.poll()}); see {out / 'server.log'}")
                time.sleep(0.5)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
    return out / "base"


if __name__ == "__main__":
    print(make_base(Path(sys.argv[1]).resolve()))
