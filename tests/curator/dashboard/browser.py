"""A headless Chromium driven over the DevTools protocol (no extra browser-automation dependency)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from websockets.sync.client import connect


def chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    def __init__(self, binary: str, width: int = 1400, height: int = 6000):
        self.port = _free_port()
        self.profile = tempfile.mkdtemp(prefix="chromium-")
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", f"--remote-debugging-port={self.port}",
             "--remote-allow-origins=*", f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 30
        while True:
            try:
                pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=1))
                break
            except OSError:
                if time.time() > deadline:
                    self.close()
                    raise
                time.sleep(0.2)
        url = next(p["webSocketDebuggerUrl"] for p in pages if p["type"] == "page")
        self.ws = connect(url, max_size=100_000_000)
        self._id = 0

    def call(self, method: str, **params: Any) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def open(self, url: str, ready_text: str, timeout: float = 60) -> str:
        """Load `url` and wait until the page's text contains `ready_text` and stops changing, with Streamlit's
        script no longer running and no element still a placeholder (a section late to render under load would
        otherwise be read before it is there)."""
        self.call("Page.navigate", url=url)
        deadline, last = time.time() + timeout, None
        while time.time() < deadline:
            text = self.evaluate("document.body ? document.body.innerText : ''") or ""
            if ready_text in text and text == last and not self.evaluate(BUSY):
                return text
            last = text
            time.sleep(1.0)
        raise TimeoutError(f"{url} never showed {ready_text!r}; last text: {(last or '')[:500]}")

    def screenshot(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)


# Streamlit still at work: its status widget's running icon, or an element still drawn as a placeholder
BUSY = ("!!document.querySelector('[data-testid=stStatusWidgetRunningIcon], "
        "[data-testid=stStatusWidgetRunningManIcon], [data-testid=stSkeleton]')")


@contextmanager
def served_dashboard(warehouse: Path, log: Path, **env: str) -> Iterator[str]:
    """`curate dashboard --no-refresh` over `warehouse` on a free port, its output in `log`: its URL once healthy;
    stopped (its whole process group) on leaving."""
    port = _free_port()
    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    with open(log, "wb") as out:
        proc = subprocess.Popen([curate, "dashboard", "--no-refresh", "--port", str(port), "--warehouse",
                                 str(warehouse)], stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **env})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None, Path(log).read_text()[-3000:]
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
                break
            except OSError:
                assert time.time() < deadline, "the dashboard did not come up"
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
