"""Scale: a warehouse of a million pairs on this machine, and what a nightly increment costs on top of it.

    python benchmarks/scale.py                       # 1,000,000 pairs, a 10,000-row increment (~30 min)
    python benchmarks/scale.py --pairs 50000         # a quick run (targets still printed, for 1M)
    python benchmarks/scale.py --pairs 200000 --baseline-checkout ../release   # side by side with a release

With `--baseline-checkout DIR` (a checkout of an earlier release with its own venv in DIR/.venv, e.g. `git
worktree add DIR 78f5e88` and `pip install -e DIR` into it), that release's own benchmarks/scale.py runs first,
in a work folder of its own, on the same generated rows (the file is linked, byte for byte): its `curate
ingest` builds its own warehouse, since a release cannot be trusted to read a warehouse migrated by a later
one. Both releases' figures are then printed side by side, and `curate build-version` of a new dataset is timed
again on each side's warehouse, the two taking turns (`--alternate N`, wall and CPU seconds), so that a change
in the machine's load falls on both.

Steps, each timed as a user runs it (`curate ... --json` in a child process; peak RSS of that process):
1. `curate ingest` of N synthetic HelpSteer3-shaped pairs (about 1 KB of text each) in one run.
2. `curate ingest` of an increment of synthetic arena-shaped rows into that warehouse, with near duplicates
   of pairs kept in step 1 planted in it: how many are found (against every kept pair) is reported.
3. The judge queue's planning for every pending pair (in-process, `plan_work`: the cache read and split).
4. Verdicts for every pair in both orders, written in-process from the GenRM stand-in's verdict function
   (SIMULATED): two million HTTP requests are not what this measures.
5. `curate build-version` over all judged pairs; `curate snapshot`; each dashboard query on the snapshot.
6. Warehouse bytes per 1,000 pairs.

Targets (issue 15): ingest of 1M <= 10 min and <= 4 GB peak RSS; increment of 10k <= 45 s and <= 1.5 GB;
build-version <= 60 s; snapshot <= 20 s; every dashboard query <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pyarrow as pa
from cli_runs import bench_env, curate_exe, timed

from common.settings import get_settings
from tasks.ingest.synth import TextMaker, synth_class, write_synth
from tasks.judge.config import config_record
from tasks.judge.genrm import Verdict, build_messages, to_a_side
from tasks.judge.run import JUDGMENT_SCHEMA
from tasks.judge.strategies import parse_strategy
from tasks.judge.targets import judge_config_from
from tasks.judge.warehouse_run import plan_work
from testing.genrm_standin import StandinConfig, verdict_for
from warehouse import dashboard as queries
from warehouse.store import Warehouse

TARGETS = {"ingest_s": 600.0, "ingest_rss_gb": 4.0, "increment_s": 45.0, "increment_rss_gb": 1.5,
           "build_s": 60.0, "snapshot_s": 20.0, "query_s": 1.0}
_WRAP = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
         "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
         "print(r.stdout, end=''); print(r.stderr[-4000:], end='', file=sys.stderr); "
         "print(f'@@ {time.perf_counter() - t:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', "
         "file=sys.stderr); sys.exit(r.returncode)")


def timed_cli(argv: list[str], env: dict[str, str]) -> tuple[dict, float, float]:
    """(JSON summary, wall s, peak RSS in GB (10^9 bytes) of the largest process it ran) of one
    `curate ... --json` call. The targets' GB are read as 10^9 bytes, the stricter reading."""
    done = subprocess.run([sys.executable, "-c", _WRAP, *argv, "--json"], env=env, capture_output=True, text=True)
    tail = done.stderr.rstrip().splitlines()[-1]
    if done.returncode != 0 or not tail.startswith("@@"):
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    _, wall, rss_kib = tail.split()
    return json.loads(done.stdout.strip().splitlines()[-1]), float(wall), int(rss_kib) * 1024 / 1e9


def increment_rows(big: Path, out: Path, rows: int, near: int, seed: int) -> int:
    """An arena-shaped increment: `near` light edits (1% of one answer's words) of rows from the big file,
    the rest fresh rows. Returns how many near duplicates were planted."""
    write_synth(out, "arena", rows - near, seed=seed, pair_bytes=1000, bad_rate=0.0, near_dup_rate=0.0,
                exact_dup_rate=0.0)
    gen, tm, rng = synth_class("arena")(seed, 1000, []), TextMaker(seed), random.Random(seed)
    picked: list[dict] = []
    with big.open(encoding="utf-8") as f:
        for line in f:
            if len(picked) >= near * 3:
                break
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):  # the generator plants hostile rows too
                continue
            if isinstance(row, dict) and isinstance(row.get("response1"), str) and isinstance(row.get("response2"), str) \
                    and len(row["response1"]) > 200 and isinstance(row.get("context"), list):
                try:
                    line.encode("utf-8")  # not one of the planted rows with lone surrogates
                    json.dumps(row, ensure_ascii=False).encode("utf-8")
                except UnicodeEncodeError:
                    continue
                picked.append(row)
    with out.open("a", encoding="utf-8") as f:
        for row in rng.sample(picked, min(near, len(picked))):
            g = {"history": row["context"], "a": tm.edit(row["response1"], 0.01), "b": row["response2"], "label": 1}
            f.write(json.dumps(gen.render(g), ensure_ascii=False) + "\n")
    return min(near, len(picked))


def write_verdicts(warehouse: Path, batch: int = 100_000) -> tuple[int, float]:
    """Both orders for every curation pair, from the stand-in's verdict function, written as one judge run."""
    settings = get_settings()
    config = replace(judge_config_from(settings), simulated=True)
    standin = StandinConfig()
    started = time.perf_counter()
    written = 0
    with Warehouse(warehouse) as wh:
        wh.judging.register_judge_config(config_record(config))
        run_id = str(uuid.uuid4())
        wh.runs.start_judge_run(run_id, config.id, "swap", ["in-process stand-in verdicts"], None)
        ids = wh.judging.curation_pair_ids()
        now = datetime.now()
        for start in range(0, len(ids), batch):
            texts = wh.judging.pair_texts(ids[start:start + batch])
            cols: dict[str, list] = {name: [] for name in JUDGMENT_SCHEMA.names}
            for pair_id, history, a, b in texts:
                for order in ("ab", "ba"):
                    v = verdict_for(build_messages(history, a, b, order), None, standin)
                    side = to_a_side(Verdict(v.score_1, v.score_2, v.ranking), order)
                    row = {"pair_id": pair_id, "judge_config_id": config.id, "order": order, "sample_index": 0,
                           "status": "ok", "score_1": v.score_1, "score_2": v.score_2, "ranking": v.ranking,
                           "score_a": side.score_a, "score_b": side.score_b, "ranking_a": side.ranking_a,
                           "margin_a": side.margin, "tokens_in": 1200, "tokens_out": 900, "latency_s": 0.01,
                           "attempts": 1, "requests": 1, "endpoint": "in-process", "served_model": standin.model,
                           "judge_run_id": run_id, "finished_at": now}
                    for name in JUDGMENT_SCHEMA.names:
                        cols[name].append(row.get(name))
            wh.judging.write_judgments(pa.table(cols, schema=JUDGMENT_SCHEMA))
            written += 2 * len(texts)
        wh.runs.finish_judge_run(run_id, "completed", {"judged": written, "requests": written})
    return written, time.perf_counter() - started


def dashboard_query_times(snapshot: Path) -> dict[str, float]:
    snap = queries.Snapshot.open(snapshot)
    versions = queries.versions(snap)
    v = versions.iloc[0] if len(versions) else None
    f = queries.Filters((), (), v["dataset"] if v is not None else None, int(v["version"]) if v is not None else None)
    calls = {
        "sources": lambda: queries.sources(snap), "domains": lambda: queries.domains(snap),
        "versions": lambda: queries.versions(snap), "funnel": lambda: queries.funnel(snap, f),
        "quarantine": lambda: queries.quarantine(snap, f), "margin_histogram": lambda: queries.margin_histogram(snap, f),
        "confidence_histogram": lambda: queries.confidence_histogram(snap, f),
        "agreement": lambda: queries.agreement(snap, f), "failures": lambda: queries.failures(snap),
        "throughput": lambda: queries.throughput(snap), "version_quality": lambda: queries.version_quality(snap),
        "model_families": lambda: queries.model_families(snap, f), "reliability": lambda: queries.reliability(snap, f),
        "version_costs": lambda: queries.version_costs(snap), "judge_configs": lambda: queries.judge_configs(snap),
        "evaluations": lambda: queries.evaluations(snap), "runs": lambda: queries.runs(snap),
    }
    out = {}
    for name, call in calls.items():
        t = time.perf_counter()
        call()
        out[name] = time.perf_counter() - t
    return out


# The lines both releases print, and the figure each holds (step: (pattern, groups as figure names)).
_FIGURE_LINES = {
    "ingest": (r"^1\. ingest .*?: ([\d.]+) s wall, peak RSS ([\d.]+) GB", ("ingest_s", "ingest_rss_gb")),
    "increment": (r"^2\. increment .*?: ([\d.]+) s wall, peak RSS ([\d.]+) GB", ("increment_s", "increment_rss_gb")),
    "planning": (r"^3\. judge-queue planning: .* planned in ([\d.]+) s", ("planning_s",)),
    "build-version": (r"^5\. build-version .*?: ([\d.]+) s wall, peak RSS ([\d.]+) GB", ("build_s", "build_rss_gb")),
    "snapshot": (r"^\s*curate snapshot: ([\d.]+) s", ("snapshot_s",)),
}


def figures_of(output: str) -> dict[str, float]:
    """The figures a run of this benchmark printed (this release's or an earlier one's)."""
    out: dict[str, float] = {}
    for pattern, names in _FIGURE_LINES.values():
        m = re.search(pattern, output, re.MULTILINE)
        if m:
            out.update(zip(names, map(float, m.groups())))
    return out


def run_baseline(checkout: Path, work: Path, big: Path, args: argparse.Namespace) -> dict[str, float]:
    """The earlier release's own scale benchmark on the same generated rows, in `work` (its output echoed)."""
    python, script = checkout / ".venv" / "bin" / "python", checkout / "benchmarks" / "scale.py"
    if not python.exists() or not script.exists():
        raise SystemExit(f"--baseline-checkout {checkout}: no .venv/bin/python or benchmarks/scale.py there")
    work.mkdir(parents=True, exist_ok=True)
    for name in (big.name, big.name + ".manifest.json"):  # the same bytes: its generator is never asked
        target = work / name
        target.unlink(missing_ok=True)
        try:
            os.link(big.parent / name, target)
        except OSError:
            shutil.copyfile(big.parent / name, target)
    (work / "w.duckdb").unlink(missing_ok=True)
    (work / "w.duckdb.wal").unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("CURATE_WAREHOUSE", "PYTHONPATH", "VIRTUAL_ENV")}
    argv = [str(python), str(script), "--pairs", str(args.pairs), "--increment", str(args.increment),
            "--near", str(args.near), "--workdir", str(work)]
    print(f"\nbaseline: {' '.join(argv)}", flush=True)
    lines, errors = [], work / "baseline-stderr.txt"
    with errors.open("w") as err, subprocess.Popen(argv, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=err,
                                                   text=True) as child:
        for line in child.stdout:  # echoed as it comes: a million pairs take half an hour
            lines.append(line)
            print(f"  | {line}", end="", flush=True)
    if child.returncode != 0:
        raise SystemExit(f"the baseline's benchmark failed ({child.returncode}):\n{errors.read_text()[-3000:]}")
    return figures_of("".join(lines))


def print_side_by_side(label: str, base: dict[str, float], ours: dict[str, float]) -> None:
    print(f"\nSIDE BY SIDE (the same {label}; wall seconds, peak RSS in GB)")
    print(f"  {'figure':<22} {'baseline':>10} {'this tree':>10} {'change':>9}")
    for name in ("ingest_s", "ingest_rss_gb", "increment_s", "increment_rss_gb", "planning_s", "build_s",
                 "build_rss_gb", "snapshot_s"):
        a, b = base.get(name), ours.get(name)
        change = f"{(b - a) / a:+.0%}" if a and b is not None else ""
        show = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        print(f"  {name:<22} {show(a):>10} {show(b):>10} {change:>9}")


def alternate_builds(sides: list[tuple[str, str, dict[str, str], Path]], rounds: int) -> None:
    """`curate build-version` of a new dataset on each side's own warehouse, the sides taking turns, so that a
    change in the machine's load falls on both: (name, curate executable, environment, warehouse) each."""
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in sides}
    for i in range(rounds):
        for name, exe, env, warehouse in sides:
            runs[name].append(timed([exe, "build-version", f"scale-again-{i}", "--warehouse", str(warehouse)], env))
    print(f"\nbuild-version again, a new dataset each time, the two releases taking turns ({rounds} each)")
    for name, got in runs.items():
        print(f"  {name:<10} " + ", ".join(f"{wall:.1f} s wall / {cpu:.1f} CPU-s" for wall, cpu in got))


def gib(gb: float) -> str:
    return f"{gb * 1e9 / 2**30:.2f} GiB"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--increment", type=int, default=10_000)
    parser.add_argument("--near", type=int, default=500, help="near duplicates of kept pairs planted in the increment")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--baseline-checkout", type=Path, default=None,
                        help="an earlier release's checkout with its own .venv: its benchmark first, same rows")
    parser.add_argument("--alternate", type=int, default=2,
                        help="with --baseline-checkout: build-version again on each side, taking turns, N times")
    args = parser.parse_args()
    tmp = None if args.workdir else tempfile.TemporaryDirectory(prefix="scale-")
    work = args.workdir or Path(tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    env = bench_env(work)
    exe = curate_exe()
    w = ["--warehouse", str(work / "w.duckdb")]
    for stale in (work / "w.duckdb", work / "w.duckdb.wal"):  # a --workdir's earlier warehouse: rows known already
        stale.unlink(missing_ok=True)
    results: list[tuple[str, str, str]] = []

    t = time.perf_counter()
    big = work / "helpsteer3.jsonl"
    manifest = Path(str(big) + ".manifest.json")
    if not (big.exists() and manifest.exists() and json.loads(manifest.read_text()).get("rows") == args.pairs):
        write_synth(big, "helpsteer3", args.pairs, seed=11, pair_bytes=1000)  # else: a --workdir's earlier data
    inc = work / "arena-increment.jsonl"
    planted = increment_rows(big, inc, args.increment, args.near, seed=12)
    print(f"data: {args.pairs:,} HelpSteer3-shaped rows ({big.stat().st_size / 1e9:.2f} GB), increment "
          f"{args.increment:,} arena-shaped rows with {planted} near duplicates of earlier rows planted, "
          f"generated in {time.perf_counter() - t:.0f} s (not timed below)")
    baseline = run_baseline(args.baseline_checkout.resolve(), work / "baseline", big, args) \
        if args.baseline_checkout else None
    printed: list[str] = []  # this release's figure lines, read back as the baseline's are

    def say(line: str) -> None:
        printed.append(line)
        print(line, flush=True)

    s, wall, rss = timed_cli([exe, "ingest", "--source", "helpsteer3", "--path", str(big), *w], env)
    say(f"\n1. ingest {s['read']:,} rows in one run: {wall:.1f} s wall, peak RSS {rss:.2f} GB ({gib(rss)}) "
        f"({s['new_pairs']:,} new pairs, {s['near_duplicates']:,} near duplicates, {s['read'] / wall:,.0f} rows/s)")
    scale_note = "" if args.pairs >= 1_000_000 else f" (at {args.pairs:,}, not 1,000,000)"
    results.append(("ingest of the big run, wall", f"{wall:.1f} s",
                    f"<= {TARGETS['ingest_s']:.0f} s {verdict(wall <= TARGETS['ingest_s'])}{scale_note}"))
    results.append(("ingest of the big run, peak RSS", f"{rss:.2f} GB",
                    f"<= {TARGETS['ingest_rss_gb']} GB {verdict(rss <= TARGETS['ingest_rss_gb'])}{scale_note}"))

    s, wall, rss = timed_cli([exe, "ingest", "--source", "arena", "--path", str(inc), *w], env)
    found = s["near_duplicates"]
    say(f"2. increment of {s['read']:,} rows: {wall:.1f} s wall, peak RSS {rss:.2f} GB ({gib(rss)}); near "
        f"duplicates found {found} (planted against earlier pairs: {planted}; the generated part plants none)")
    results.append(("nightly increment, wall", f"{wall:.1f} s",
                    f"<= {TARGETS['increment_s']:.0f} s {verdict(wall <= TARGETS['increment_s'])}"))
    results.append(("nightly increment, peak RSS", f"{rss:.2f} GB",
                    f"<= {TARGETS['increment_rss_gb']} GB {verdict(rss <= TARGETS['increment_rss_gb'])}"))
    results.append(("near duplicates of earlier pairs found", f"{found} of {planted} planted",
                    verdict(found >= 0.95 * planted)))

    settings = get_settings()
    config = replace(judge_config_from(settings), simulated=True)
    with Warehouse(work / "w.duckdb") as wh:
        t = time.perf_counter()
        plan = plan_work(wh.judging, config.id, parse_strategy("swap", settings), None, None, 3)
        planning = time.perf_counter() - t
    say(f"3. judge-queue planning: {len(plan.pending):,} pending pairs ({2 * len(plan.pending):,} judgments) "
        f"planned in {planning:.2f} s")
    results.append(("judge-queue planning", f"{planning:.2f} s for {2 * len(plan.pending):,} judgments", "(reported)"))

    n, seconds = write_verdicts(work / "w.duckdb")
    print(f"4. {n:,} SIMULATED verdicts written in-process in {seconds:.0f} s (stand-in verdict function)")

    s, wall, rss = timed_cli([exe, "build-version", "scale", *w], env)
    say(f"5. build-version over {s['stats']['pairs_judged']:,} judged pairs: {wall:.1f} s wall, peak RSS {rss:.2f} "
        f"GB ({gib(rss)}; {s['rows']:,} rows kept)")
    results.append(("build-version", f"{wall:.1f} s / {rss:.2f} GB", f"<= {TARGETS['build_s']:.0f} s "
                    f"{verdict(wall <= TARGETS['build_s'])}"))

    t = time.perf_counter()
    done = subprocess.run([exe, "snapshot", *w], env=env, capture_output=True, text=True)
    snap_s = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    say(f"   curate snapshot: {snap_s:.1f} s")
    results.append(("dashboard snapshot", f"{snap_s:.1f} s", f"<= {TARGETS['snapshot_s']:.0f} s "
                    f"{verdict(snap_s <= TARGETS['snapshot_s'])}"))
    times = dashboard_query_times(work / "dashboard.duckdb")
    slowest = max(times, key=times.get)
    print("   dashboard queries: " + ", ".join(f"{k} {v:.3f} s" for k, v in times.items()))
    results.append(("slowest dashboard query", f"{slowest} {times[slowest]:.3f} s",
                    f"<= {TARGETS['query_s']:.0f} s {verdict(times[slowest] <= TARGETS['query_s'])}"))

    size = (work / "w.duckdb").stat().st_size
    with Warehouse(work / "w.duckdb", read_only=True) as wh:
        pairs = wh.query("SELECT count(*) FROM candidate_pairs")[0][0]
    print(f"6. warehouse {size / 1e9:.2f} GB for {pairs:,} pairs: {size / pairs * 1000 / 1e6:.2f} MB per 1,000 pairs")
    results.append(("warehouse bytes per 1,000 pairs", f"{size / pairs * 1000 / 1e6:.2f} MB", "(reported)"))

    print(f"\nTARGETS (issue 15; {os.cpu_count()} CPUs)")
    for name, figure, target in results:
        print(f"  {name:<40} {figure:<40} {target}")
    if baseline is not None:
        print_side_by_side(f"{args.pairs:,} generated rows", baseline, figures_of("\n".join(printed)))
        base = args.baseline_checkout.resolve()
        base_env = {k: v for k, v in bench_env(work / "baseline").items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        alternate_builds([("baseline", str(base / ".venv" / "bin" / "curate"), base_env, work / "baseline" / "w.duckdb"),
                          ("this tree", exe, env, work / "w.duckdb")], args.alternate)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
