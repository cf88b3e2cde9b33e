"""The fixed cost of a `curate` call, with and without a running Prefect server.

1. No-ops: wall and CPU seconds of `ingest`, `judge`, `build-version` and `publish` when there is nothing to do
   (an unchanged revision, every verdict cached, an unchanged version, already published), so that all of it is
   start-up. Without a server they are answered from the warehouse before Prefect starts.
2. Flow commands: each runs a flow on a little work (`ingest` of 5 new rows, `judge` of their 10 judgments,
   `build-version` of a new dataset, `publish` of it to a new folder), beside `curate status` (Python and the
   warehouse, no Prefect): the difference is the flow command's own cost, beyond its work.
3. Both again with a running `prefect server start` (on 127.0.0.1, started and stopped here, its own
   PREFECT_HOME) named by `PREFECT_API_URL`: then every call, a no-op too, is a flow run on that server.
4. What the first use of a fresh PREFECT_HOME costs: a flow command on a home never used (Prefect's database
   made and migrated) beside one on a home used before, and the server's start on a fresh home and again.

A small warehouse is made first (the CLI end to end, the stand-in judging: SIMULATED).

Baseline named in issue 13: a `curate judge` with nothing to do cost 8-16 s wall and 7-8 CPU-s; the target
is at least half of that where no server runs. Target of "Fast again": a flow command's own cost at most 3 s
with a running Prefect server.

Run: `python benchmarks/startup.py [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_runs import bench_env, curate_exe, timed

from common.processes import stop_process
from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess

BASELINE_JUDGE_WALL = (8.0, 16.0)
BASELINE_JUDGE_CPU = (7.0, 8.0)
OWN_COST_TARGET_S = 3.0  # a flow command's own cost with a running Prefect server
FLOW_COMMANDS = ("ingest", "judge", "build-version", "publish")


def medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


class PrefectServer:
    """`prefect server start` on a free port of 127.0.0.1 with a PREFECT_HOME of its own, until the block ends."""

    def __init__(self, home: Path, env: dict[str, str]):
        self.home, self.env, self.process = home, env, None
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/api"
        self.ready_s = 0.0

    def __enter__(self) -> PrefectServer:
        self.home.mkdir(parents=True, exist_ok=True)
        log = (self.home / "server.log").open("a")
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [str(Path(sys.executable).with_name("prefect")), "server", "start", "--host", "127.0.0.1", "--port",
             str(self.port), "--no-ui"],
            env={**self.env, "PREFECT_HOME": str(self.home)}, stdin=subprocess.DEVNULL,
            stdout=log, stderr=log, start_new_session=True)
        deadline = started + 180
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"prefect server exited ({self.process.returncode}):\n"
                                 f"{(self.home / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2):
                    self.ready_s = time.perf_counter() - started
                    return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        raise SystemExit("prefect server did not answer within 180 s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            stop_process(self.process, 15, group=True)
            self.process = None


def flow_cycle(exe: str, work: Path, w: list[str], endpoint: str, env: dict[str, str], tag: str, i: int,
               calls: dict[str, list[tuple[float, float]]]) -> None:
    """One round of the four flow commands, each on a little new work, timed into `calls`."""
    rows = work / f"new-{tag}-{i}.jsonl"
    write_synth(rows, "helpsteer3", 5, seed=1000 + 100 * (tag == "server") + i, pair_bytes=500, bad_rate=0.0,
                near_dup_rate=0.0, exact_dup_rate=0.0)
    name = f"startup-{tag}-{i}"
    for command, argv in (("ingest", ["ingest", "--source", "helpsteer3", "--path", str(rows)]),
                          ("judge", ["judge", "--endpoint", endpoint]),
                          ("build-version", ["build-version", name]),
                          ("publish", ["publish", name, "--to", str(work / "published")])):
        calls.setdefault(command, []).append(timed([exe, *argv, *w], env))


def measure(exe: str, work: Path, w: list[str], env: dict[str, str], commands: dict[str, list[str]], endpoint: str,
            repeat: int, tag: str, title: str) -> dict[str, tuple[float, float]]:
    """The no-ops and the flow commands beside `status`, printed under `title`; returns the flow commands' medians
    and status's."""
    print(f"\n== {title}")
    print(f"no-op calls, {repeat} each")
    print(f"{'command':<14} {'wall s (median)':>16} {'CPU s (median)':>15}")
    noops = {}
    for name, argv in commands.items():
        noops[name] = medians([timed(argv, env) for _ in range(repeat)])
        print(f"{name:<14} {noops[name][0]:>16.2f} {noops[name][1]:>15.2f}")
    calls: dict[str, list[tuple[float, float]]] = {"status": []}
    for i in range(repeat):
        calls["status"].append(timed([exe, "status", *w], env))
        flow_cycle(exe, work, w, endpoint, env, tag, i, calls)
    got = {name: medians(runs) for name, runs in calls.items()}
    floor = got["status"][0]
    print(f"\nflow commands on a little work ({repeat} rounds: ingest 5 new rows, judge their 10 judgments, "
          "build-version a new dataset, publish it), beside `status`")
    print(f"{'command':<14} {'wall s (median)':>16} {'CPU s (median)':>15} {'wall - status':>14}")
    for name in ("status", *FLOW_COMMANDS):
        wall, cpu = got[name]
        print(f"{name:<14} {wall:>16.2f} {cpu:>15.2f} {'' if name == 'status' else f'{wall - floor:.2f}':>14}")
    return {**{f"noop {k}": v for k, v in noops.items()}, **got}


def first_use(exe: str, work: Path, w: list[str], env: dict[str, str], repeat: int) -> None:
    """A flow command (`ingest --force` of the small file) on a PREFECT_HOME never used, beside a used one."""
    argv = [exe, "ingest", "--source", "helpsteer3", "--path", str(work / "hs.jsonl"), "--force", *w]
    fresh = [timed(argv, {**env, "PREFECT_HOME": tempfile.mkdtemp(prefix="fresh-home-", dir=work)})
             for _ in range(repeat)]
    used = [timed(argv, env) for _ in range(repeat)]
    (fw, fc), (uw, uc) = medians(fresh), medians(used)
    print(f"\n== the first use of a fresh PREFECT_HOME (no server; `ingest --force` of 200 known rows, {repeat} each)")
    print(f"fresh home (Prefect's database made and migrated): {fw:.2f} s wall / {fc:.2f} CPU-s; a used home: "
          f"{uw:.2f} / {uc:.2f}; the first use costs {fw - uw:+.2f} s")


def server_starts(home: Path, env: dict[str, str]) -> None:
    """Seconds until a `prefect server start` answers: on a fresh home, then again on the same home."""
    with PrefectServer(home, env) as s:
        first = s.ready_s
    with PrefectServer(home, env) as s:
        again = s.ready_s
    print(f"\n`prefect server start` until it answers: {first:.2f} s on a fresh PREFECT_HOME, {again:.2f} s on the "
          "same home again")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    exe = curate_exe()
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        work = Path(tmp)
        env = bench_env(work, "PREFECT_API_URL")
        w = ["--warehouse", str(work / "w.duckdb")]
        data = work / "hs.jsonl"
        write_synth(data, "helpsteer3", 200, seed=3, pair_bytes=500)
        with StandinProcess(StandinConfig(latency_mean=0.005)) as standin:
            commands = {
                "ingest": [exe, "ingest", "--source", "helpsteer3", "--path", str(data), *w],
                "judge": [exe, "judge", "--endpoint", standin.url, *w],
                "build-version": [exe, "build-version", "startup", *w],
                "publish": [exe, "publish", "startup", "--to", str(work / "published"), *w],
            }
            for argv in commands.values():  # the real work, once
                timed(argv, env)
            temp = measure(exe, work, w, env, commands, standin.url, args.repeat, "temp",
                           "no Prefect server: a temporary Prefect API per call that runs a flow")
            server_starts(work / "server-home-probe", env)
            with PrefectServer(work / "server-home", env) as server:
                served = measure(exe, work, w, {**env, "PREFECT_API_URL": server.url}, commands, standin.url,
                                 args.repeat, "server", f"a running `prefect server start` (PREFECT_API_URL={server.url})")
            first_use(exe, work, w, env, args.repeat)

    wall, cpu = temp["noop judge"]
    print(f"\njudge no-op vs the issue's baseline ({BASELINE_JUDGE_WALL[0]:g}-{BASELINE_JUDGE_WALL[1]:g} s wall, "
          f"{BASELINE_JUDGE_CPU[0]:g}-{BASELINE_JUDGE_CPU[1]:g} CPU-s): {wall / BASELINE_JUDGE_WALL[0]:.2f}x of the "
          f"lower wall figure, {cpu / BASELINE_JUDGE_CPU[0]:.2f}x of the lower CPU figure")
    halved = wall <= BASELINE_JUDGE_WALL[0] / 2 and cpu <= BASELINE_JUDGE_CPU[0] / 2
    print(f"{'PASS' if halved else 'FAIL'}  judge's fixed cost at most half the baseline (<= "
          f"{BASELINE_JUDGE_WALL[0] / 2:g} s wall and {BASELINE_JUDGE_CPU[0] / 2:g} CPU-s)")
    own_cost = {name: served[name][0] - served["status"][0] for name in FLOW_COMMANDS}
    own = all(cost <= OWN_COST_TARGET_S for cost in own_cost.values())
    costs = ", ".join(f"{name} {cost:.2f} s" for name, cost in own_cost.items())
    print(f"{'PASS' if own else 'FAIL'}  a flow command's own cost (wall - status) with a running Prefect server "
          f"<= {OWN_COST_TARGET_S:g} s: {costs}")
    sys.exit(0 if halved and own else 1)


if __name__ == "__main__":
    main()
