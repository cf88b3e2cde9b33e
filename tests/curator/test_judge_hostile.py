"""`curate judge` against a hostile server, as a user runs it: every reply of the run is stored as a verdict
or a failure with its reason, and 100 MB replies are read no further than the cap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from tasks.ingest.synth import write_synth
from tasks.judge.replies import RAW_TEXT_LIMIT
from tests.tasks.judge.hostile_judge import HostileJudge
from tests.tasks.judge.test_hostile_judge import EXPECTED

pytestmark = pytest.mark.prefect
CURATE = str(Path(sys.executable).with_name("curate"))
# Runs a command and prints the largest resident set of it and its children, in KiB.
PEAK_RSS = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(done.returncode)")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, prefect_server) -> tuple[Path, dict[str, str]]:
    """Eight clean pairs ingested by the CLI; each test judges a copy."""
    tmp = tmp_path_factory.mktemp("hostile")
    env = {**os.environ, "PREFECT_API_URL": prefect_server}
    data = tmp / "hs.jsonl"
    write_synth(data, "helpsteer3", 8, seed=5, pair_bytes=300, bad_rate=0.0, exact_dup_rate=0.0, near_dup_rate=0.0)
    done = subprocess.run([CURATE, "ingest", "--source", "helpsteer3", "--path", str(data), "--warehouse",
                           str(tmp / "w.duckdb"), "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return tmp / "w.duckdb", env


def _judge(tmp_path: Path, warehouse: tuple[Path, dict], url: str, *args: str) -> subprocess.CompletedProcess:
    copy = tmp_path / "w.duckdb"
    copy.write_bytes(warehouse[0].read_bytes())
    return subprocess.run([sys.executable, "-c", PEAK_RSS, CURATE, "judge", "--endpoint", url, "--warehouse",
                           str(copy), "--max-in-flight", "2", "--json", *args],
                          env=warehouse[1], capture_output=True, text=True, timeout=300)


def test_one_run_meets_every_reply_shape_and_stores_every_answer(tmp_path, warehouse):
    script = [k for k in EXPECTED if not k.startswith("huge")]
    with HostileJudge(script) as server:
        done = _judge(tmp_path, warehouse, server.url)
        served = Counter(server.kinds_served)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["requests"] == 16 and sum(served.values()) == 16
    # some judgments failed, not all: exit 0 and one line saying how many and why
    failed = sum(summary["failed"].values())
    assert done.returncode == 0 and f"warning: {failed} failed (" in done.stderr
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT status, failure_reason, length(raw_text) FROM judgments").fetchall()
    assert len(rows) == 16  # every answer of the run is stored, whatever its neighbours were
    expected = Counter()
    for kind, n in served.items():
        expected[EXPECTED[kind]] += n
    assert Counter((s, r) for s, r, _ in rows) == expected
    assert max(n or 0 for *_, n in rows) <= RAW_TEXT_LIMIT + 100


def test_huge_replies_are_read_no_further_than_the_cap(tmp_path, warehouse):
    with HostileJudge(["huge", "huge_declared", "huge_error"]) as server:
        done = _judge(tmp_path, warehouse, server.url, "--limit", "3")
    peak_mib = int(done.stderr.strip().splitlines()[-1]) / 1024
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["requests"] == 6 and summary["failed"] == {"too_large": 6}, summary
    # every judgment failed: exit 2, one line naming the reason, its count and the first error
    lines = done.stderr.strip().splitlines()[:-1]
    errors = [line for line in lines if "has no /tokenize" not in line]  # this server cannot count tokens: said
    assert done.returncode == 2 and len(errors) == 1, done.stderr
    assert errors[0].startswith("error: every judgment of this run failed (6): 6 too_large, first error: reply body over")
    assert peak_mib < 600, f"peak RSS {peak_mib:.0f} MiB"
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        stored = con.execute("SELECT count(*), max(length(coalesce(raw_text, ''))) FROM judgments").fetchone()
    assert stored[0] == 6 and stored[1] < 1000
