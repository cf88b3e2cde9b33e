"""`curate dashboard` stops its Streamlit server with it: a SIGTERM to the command leaves nothing serving."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.curator.dashboard.browser import _free_port


def _serving(url: str) -> bool:
    try:
        urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).close()
        return True
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_command_stops_the_server(tmp_path, sig):
    port = _free_port()
    curate = os.path.join(os.path.dirname(sys.executable), "curate")
    proc = subprocess.Popen([curate, "dashboard", "--no-refresh", "--port", str(port), "--warehouse",
                             str(tmp_path / "w.duckdb")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while not _serving(url):
            assert proc.poll() is None and time.time() < deadline, "the dashboard did not come up"
            time.sleep(0.3)
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert children, "streamlit runs as the command's child"
        os.kill(proc.pid, sig)  # the command only, as `kill PID` would
        proc.wait(30)
        deadline = time.time() + 10
        while _serving(url) and time.time() < deadline:
            time.sleep(0.2)
        assert not _serving(url)
        for child in children:  # no orphan left re-parented to init
            assert not os.path.exists(f"/proc/{child}") or open(f"/proc/{child}/stat").read().split(")")[1].split()[0] == "Z"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
