"""Ctrl-C (SIGINT to the foreground process group) and SIGTERM stop a command that runs a flow within 5 s: one
line on stderr, its unfinished run marked interrupted, Prefect's temporary API and the watchdog stopped, and a
rerun resumes. A second Ctrl-C exits at once. Real `curate` processes in a process group of their own, as a
terminal runs a foreground job, doing real work when the signal comes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess

pytestmark = [pytest.mark.prefect, pytest.mark.skipif(not Path("/proc").exists(), reason="reads /proc")]
CURATE = str(Path(sys.executable).with_name("curate"))
REPO = Path(__file__).resolve().parents[2]
WITHIN = 5.0  # seconds from the signal to the command's exit
TASK_DONE = "prefect.task_runs - Finished in state Completed()"


def _processes() -> dict[int, list[str]]:
    """{pid: the fields of /proc/pid/stat after the name} of every process."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                found[int(entry)] = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                pass
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _env(prefect_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURATE_") and k != "PREFECT_API_URL"}
    # INFO: the log file beside the warehouse shows where the flow is (the tests wait for it)
    env.update(PREFECT_HOME=str(prefect_home), PREFECT_LOGGING_LEVEL="INFO")
    return env


def _log_count(tmp_path: Path, text: str) -> int:
    try:
        return (tmp_path / "logs" / "curate.log").read_text(errors="replace").count(text)
    except OSError:
        return 0


def _curate_json(env: dict[str, str], *args: str) -> dict:
    done = subprocess.run([CURATE, *args, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


class Command:
    """A `curate` command in a process group of its own; stdout and stderr go to files, so what it prints after
    the signal is told from what it printed before. Its helpers (Prefect's API server, the watchdog: its
    children) are noted while it runs; whatever is left of them is killed by id at the end."""

    def __init__(self, tmp_path: Path, env: dict[str, str], *args: str):
        self.out = open(tmp_path / f"stdout-{time.monotonic_ns()}", "w+b")
        self.err = open(tmp_path / f"stderr-{time.monotonic_ns()}", "w+b")
        self.proc = subprocess.Popen([CURATE, *args], stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err,
                                     env=env, start_new_session=True)
        self.helpers: dict[int, tuple[str, str]] = {}  # pid -> (start time, command line)
        self.mark = 0
        self.signalled_at = 0.0

    def __enter__(self) -> Command:
        return self

    def __exit__(self, *exc: object) -> None:
        for pid in [self.proc.pid, *self.leftovers()]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait()
        self.out.close()
        self.err.close()

    def _note_helpers(self) -> None:
        for pid, fields in _processes().items():
            if int(fields[1]) == self.proc.pid:  # its command line again: a child just forked has its parent's
                self.helpers[pid] = (fields[19], _cmdline(pid))

    def wait_until(self, ready: Callable[[], bool], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self._note_helpers()
            if ready():
                break
            assert self.proc.poll() is None, f"the command ended before it was mid-run:\n{self.stderr()}"
            assert time.monotonic() < deadline, f"the command was not mid-run within {timeout} s:\n{self.stderr()}"
            time.sleep(0.05)
        self._note_helpers()

    def send(self, sig: int) -> None:
        """`sig` to the whole process group, as a terminal's Ctrl-C."""
        self.err.flush()
        self.mark = os.path.getsize(self.err.name)
        os.killpg(self.proc.pid, sig)
        self.signalled_at = time.monotonic()

    def exited_after(self) -> float:
        try:
            self.proc.wait(WITHIN + 25)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {WITHIN + 25:g} s after the signal:\n{self.stderr()}")
        return time.monotonic() - self.signalled_at

    def stderr(self, after_signal: bool = False) -> str:
        return Path(self.err.name).read_bytes()[self.mark if after_signal else 0:].decode(errors="replace")

    def stdout(self) -> str:
        return Path(self.out.name).read_text(errors="replace")

    def leftovers(self) -> list[int]:
        """Running processes of its group, and its helpers still running (the very processes: start time too)."""
        now = _processes()
        return [pid for pid, fields in now.items() if fields[0] != "Z" and (
            int(fields[2]) == self.proc.pid or (pid in self.helpers and self.helpers[pid][0] == fields[19]))]

    def leftovers_after(self, seconds: float) -> list[int]:
        deadline = time.monotonic() + seconds
        while (left := self.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return left


def _assert_stopped_in_order(cmd: Command, command: str, code: int, marked: bool = True) -> None:
    seconds = cmd.exited_after()
    said = [line for line in cmd.stderr(after_signal=True).splitlines() if line.strip()]
    assert cmd.proc.returncode == code, cmd.stderr()
    assert seconds < WITHIN, f"{command} took {seconds:.1f} s to stop"
    assert len(said) == 1, "\n".join(said)
    assert said[0].startswith(f"interrupted: {command} stopped"), said
    if marked:
        assert "run is marked interrupted, rerun to resume" in said[0]
    assert cmd.stdout() == ""
    kinds = [line for _, line in cmd.helpers.values()]
    assert any("prefect.server.api.server:create_app" in k for k in kinds), "the command's API server was not seen"
    assert any("curator.watchdog" in k for k in kinds), "the command's watchdog was not seen"
    # The API is stopped before the command exits; the watchdog is told to stop and goes at once.
    assert not cmd.leftovers_after(2.0), [(p, _cmdline(p)) for p in cmd.leftovers()]


def _status(env: dict[str, str], warehouse: Path) -> dict:
    return _curate_json(env, "status", "--warehouse", str(warehouse))


def test_ctrl_c_stops_an_ingest_in_order_and_a_rerun_resumes(tmp_path, prefect_home):
    data, warehouse = tmp_path / "hs.jsonl", tmp_path / "w.duckdb"
    write_synth(data, "helpsteer3", 4000, seed=11, pair_bytes=1000)
    env = _env(prefect_home)
    ingest = ["ingest", "--source", "helpsteer3", "--path", str(data), "--batch-size", "400", "--warehouse",
              str(warehouse), "--json"]
    with Command(tmp_path, env, *ingest) as cmd:
        cmd.wait_until(lambda: _log_count(tmp_path, TASK_DONE) >= 3)  # the indexes and two batches landed
        cmd.send(signal.SIGINT)
        _assert_stopped_in_order(cmd, "ingest", 130)

    status = _status(env, warehouse)
    assert [(r["kind"], r["pid"]) for r in status["interrupted"]] == [("ingest", cmd.proc.pid)]
    assert status["interrupted"][0]["interrupted_at"] is not None  # recorded by the command itself
    assert [r["status"] for r in status["runs"]] == ["interrupted"]
    kept = status["counts"]
    rerun = _curate_json(env, *ingest[:-1])
    assert rerun["read"] == 4000 and rerun["already_ingested"] >= 700  # what landed is not landed again
    assert rerun["already_ingested"] + rerun["exact_duplicates"] + rerun["near_duplicates"] + rerun["new_pairs"] \
        == rerun["valid"]
    status = _status(env, warehouse)
    assert [r["status"] for r in status["runs"]] == ["completed", "interrupted"]
    assert status["counts"] != kept


def test_ctrl_c_stops_a_judge_mid_run_and_a_rerun_sends_only_what_is_missing(tmp_path, prefect_home):
    data, warehouse = tmp_path / "hs.jsonl", tmp_path / "w.duckdb"
    write_synth(data, "helpsteer3", 60, seed=12, pair_bytes=600)
    env = _env(prefect_home)
    w = ["--warehouse", str(warehouse)]
    _curate_json(env, "ingest", "--source", "helpsteer3", "--path", str(data), *w)
    judge = ["judge", "--strategy", "single", *w]
    with StandinProcess(StandinConfig(latency_mean=1.0, capacity=4)) as slow, \
            Command(tmp_path, env, *judge, "--endpoint", slow.url, "--json") as cmd:
        cmd.wait_until(lambda: slow.stats()["completed"] >= 3)
        cmd.send(signal.SIGINT)
        _assert_stopped_in_order(cmd, "judge", 130)
        assert slow.returncode is None  # a server the command did not start is not the command's to stop

    status = _status(env, warehouse)
    assert [(r["kind"], r["pid"]) for r in status["interrupted"]] == [("judge", cmd.proc.pid)]
    verdicts = status["judging"][0]["ok"]
    assert verdicts >= 1  # the verdicts that came back before the signal are kept
    with StandinProcess(StandinConfig(latency_mean=0.002)) as fast:
        rerun = _curate_json(env, *judge, "--endpoint", fast.url)
    assert rerun["skipped_cached"] == verdicts and rerun["judged"] == rerun["pairs"] - verdicts


def test_sigterm_stops_a_pipeline_mid_judge_and_a_rerun_completes_it(tmp_path, prefect_home):
    data, warehouse = tmp_path / "hs.jsonl", tmp_path / "w.duckdb"
    write_synth(data, "helpsteer3", 60, seed=13, pair_bytes=600)
    env = _env(prefect_home)
    run = ["run", "--source", f"helpsteer3={data}", "--dataset", "sig",
           "--publish-to", str(tmp_path / "published"), "--warehouse", str(warehouse)]
    with StandinProcess(StandinConfig(latency_mean=1.0, capacity=4)) as slow, \
            Command(tmp_path, env, *run, "--endpoint", slow.url, "--json") as cmd:
        cmd.wait_until(lambda: slow.stats()["completed"] >= 3)
        cmd.send(signal.SIGTERM)
        _assert_stopped_in_order(cmd, "run", 143)
        assert "(SIGTERM)" in cmd.stderr(after_signal=True)

    status = _status(env, warehouse)
    assert [r["kind"] for r in status["interrupted"]] == ["judge"]  # the ingest had completed
    assert [r["status"] for r in status["runs"]] == ["completed"] and not status["versions"]
    with StandinProcess(StandinConfig(latency_mean=0.002)) as fast:
        rerun = _curate_json(env, *run, "--endpoint", fast.url)
    assert rerun["ingest"]["helpsteer3"]["note"].startswith("unchanged")
    assert rerun["judge"]["skipped_cached"] >= 1 and rerun["version"]["version"] == 1
    assert Path(rerun["publish"]["target"]).is_dir()


def test_a_second_ctrl_c_stops_an_ingest_at_once(tmp_path, prefect_home):
    data, warehouse = tmp_path / "hs.jsonl", tmp_path / "w.duckdb"
    write_synth(data, "helpsteer3", 3000, seed=15, pair_bytes=1000)
    env = _env(prefect_home)
    with Command(tmp_path, env, "ingest", "--source", "helpsteer3", "--path", str(data), "--batch-size", "300",
                 "--warehouse", str(warehouse), "--json") as cmd:
        cmd.wait_until(lambda: _log_count(tmp_path, TASK_DONE) >= 2)
        cmd.send(signal.SIGINT)
        time.sleep(0.1)
        os.killpg(cmd.proc.pid, signal.SIGINT)
        second = time.monotonic()
        cmd.exited_after()
        assert time.monotonic() - second < 1.5
        said = [line for line in cmd.stderr(after_signal=True).splitlines() if line.strip()]
        assert cmd.proc.returncode == 130 and len(said) == 1 and said[0].startswith("interrupted: ingest stopped"), said
        # The API was told to stop, the watchdog stops whatever else is left once the command is gone.
        assert not cmd.leftovers_after(WITHIN), [(p, _cmdline(p)) for p in cmd.leftovers()]
    assert [r["kind"] for r in _status(env, warehouse)["interrupted"]] == ["ingest"]


@pytest.fixture(scope="module")
def judged(tmp_path_factory, new_prefect_home) -> tuple[Path, dict[str, str]]:
    """A warehouse with judged pairs and a first version of `sig`, its folder beside it."""
    tmp = tmp_path_factory.mktemp("judged")
    data = tmp / "hs.jsonl"
    write_synth(data, "helpsteer3", 1500, seed=14, pair_bytes=600)
    env = _env(new_prefect_home(tmp / "prefect-home"))
    with StandinProcess(StandinConfig(latency_mean=0.002)) as fast:
        _curate_json(env, "run", "--source", f"helpsteer3={data}", "--endpoint", fast.url, "--dataset", "sig",
                     "--skip", "publish", "--warehouse", str(tmp / "w.duckdb"))
    return tmp, env


@pytest.mark.parametrize("stage", ["build-version", "publish"])
def test_ctrl_c_stops_build_version_and_publish_mid_flow(judged, stage):
    tmp, env = judged
    args = {"build-version": ["build-version", "sig", "--min-abs-margin", "0.5"],
            "publish": ["publish", "sig", "--to", str(tmp / "published")]}[stage]
    w = ["--warehouse", str(tmp / "w.duckdb")]
    versions = _status(env, tmp / "w.duckdb")["versions"]
    began = f"for flow '{stage}'"
    before = _log_count(tmp, began)
    with Command(tmp, env, *args, *w, "--json") as cmd:
        cmd.wait_until(lambda: _log_count(tmp, began) > before)
        cmd.send(signal.SIGINT)
        _assert_stopped_in_order(cmd, stage, 130, marked=False)  # neither records a run: nothing is half done

    assert _status(env, tmp / "w.duckdb")["versions"] == versions  # no version built, none marked published
    folder = tmp / "published" / "sig"
    assert not (folder.is_dir() and [p.name for p in folder.iterdir() if p.name.startswith(".")])  # no staging left
    rerun = _curate_json(env, *args, *w)
    if stage == "build-version":
        assert rerun["new_version"] and rerun["version"] == max(v["version"] for v in versions) + 1
    else:
        assert not rerun["already_published"] and Path(rerun["target"]).is_dir()


def _stoppable_script(body: str) -> list[str]:
    """A process running `body` inside `curator.interrupt.stoppable`; the body prints "ready" when it is."""
    code = textwrap.dedent("""
        import sys, time
        from curator.interrupt import stoppable

        def in_order(since):
            print("in order", flush=True)
            return 1

        with stoppable("demo", in_order, lambda: print("at once", flush=True)):
    """) + textwrap.indent(textwrap.dedent(body), "    ")
    return [sys.executable, "-c", code]


def _start(argv: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


# A body whose cleanup takes a minute: what a stuck unwind looks like to the stop handlers.
HANGING_UNWIND = """
        try:
            print("ready", flush=True)
            time.sleep(60)
        finally:
            time.sleep(60)
    """


def test_a_second_ctrl_c_exits_at_once_even_while_the_first_is_still_unwinding():
    # The body's cleanup takes a minute: the first Ctrl-C would wait for it (up to the grace), the second does not.
    proc = _start(_stoppable_script(HANGING_UNWIND))
    try:
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.3)
        assert proc.poll() is None
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        assert time.monotonic() - sent < 1.0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert out.splitlines() == ["at once"]
    assert err.splitlines() == ["interrupted: demo stopped at once; a run it left unfinished shows as interrupted, "
                                "rerun to resume"]


def test_an_unwinding_that_hangs_is_cut_short_after_the_grace():
    proc = _start(_stoppable_script(HANGING_UNWIND))
    try:
        sent = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143 and 3.5 < seconds < WITHIN
    assert out.splitlines() == ["at once"] and len(err.splitlines()) == 1 and "(SIGTERM)" in err


def test_a_signal_outside_any_work_stops_in_order_with_one_line():
    proc = _start(_stoppable_script("""
        print("ready", flush=True)
        time.sleep(60)
    """))
    try:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and out.splitlines() == ["in order"]
    assert err.splitlines() == ["interrupted: demo stopped; its unfinished run is marked interrupted, rerun to resume"]


def test_the_line_says_what_was_stopped_and_what_is_left():
    from curator.interrupt import exit_code, stopped_line

    assert exit_code(signal.SIGINT) == 130 and exit_code(signal.SIGTERM) == 143
    assert stopped_line("ingest", signal.SIGINT, 1) == \
        "interrupted: ingest stopped; its unfinished run is marked interrupted, rerun to resume"
    assert stopped_line("run", signal.SIGTERM, 2) == \
        "interrupted: run stopped (SIGTERM); its 2 unfinished runs are marked interrupted, rerun to resume"
    assert stopped_line("publish", signal.SIGINT, 0) == "interrupted: publish stopped; rerun to resume"
    assert "the next command marks" in stopped_line("judge", signal.SIGINT, None)


def test_a_stopped_process_s_runs_are_interrupted_not_failed(tmp_path, monkeypatch):
    from datetime import datetime, timedelta, timezone

    from common import processes
    from warehouse.store import Warehouse

    since = datetime.now(timezone.utc).replace(tzinfo=None)
    with Warehouse(tmp_path / "w.duckdb") as wh:
        wh.runs.start_ingest_run("earlier", "helpsteer3", "x", "file:1", {})
        wh.con.execute("UPDATE ingest_runs SET started_at = ? WHERE run_id = 'earlier'", [since - timedelta(hours=1)])
        for run_id in ("done", "failing", "running"):
            wh.runs.start_ingest_run(run_id, "helpsteer3", "x", "file:1", {})
        wh.runs.start_judge_run("judging", "jc-1", "single", ["http://127.0.0.1:9/v1"], None)
        wh.runs.finish_ingest_run("done", "completed", {})
        monkeypatch.setattr(processes, "_stopping", [signal.SIGINT])
        wh.runs.finish_ingest_run("failing", "failed", {}, error="Interrupted: SIGINT")  # its flow's own record
        assert wh.query("SELECT status, interrupted_at IS NOT NULL FROM ingest_runs WHERE run_id = 'failing'") \
            == [("interrupted", True)]
        assert wh.runs.mark_own_runs_interrupted(since) == 3  # 'failing', 'running' and the judge run
        status = dict(wh.query("SELECT run_id, status FROM ingest_runs"))
        assert status == {"earlier": "running", "done": "completed", "failing": "interrupted", "running": "interrupted"}
        assert wh.query("SELECT status FROM judge_runs") == [("interrupted",)]
