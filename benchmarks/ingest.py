#!/usr/bin/env python
"""Ingest benchmark: synthetic HelpSteer3-shaped pairs through `curate ingest`, as a user runs it.

    python benchmarks/ingest.py                # 100k rows, about 6 KB of text per pair
    python benchmarks/ingest.py --rows 5000    # a quick check

Prints wall seconds, peak RSS and pairs/s of the CLI (`curate ingest --json`, its own process, so the peak RSS
is the ingest's own), the near-dup step's precision and recall on the planted near duplicates (read
back from the warehouse the flow wrote), and the near-dup step timed in-process beside datasketch's
MinHash + MinHashLSH on the same documents and the same shingles. Ends with a TARGETS block.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runnable from a checkout without installing the project

from common.settings import get_settings
from tasks.ingest import minhash
from tasks.ingest.dedup import NearDupIndex, near_dup_text
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import read_local
from tasks.ingest.sources import get_source
from tasks.ingest.synth import SynthManifest, write_synth
from warehouse.store import Warehouse

SOURCE = "helpsteer3"
PAIR_BYTES = 6000
BATCH = 5000  # the flow's default batch size: the near-dup step sees the docs in batches this big
CHUNK = 256  # NearDupIndex.signatures_of shingles this many docs at a time
BASELINE_PERMS = 128
TARGET_WALL_S = 30.0
TARGET_RSS_BYTES = 2 * 1024**3
TARGET_SPEEDUP = 5.0
TARGET_RECALL = 0.95
TARGET_PRECISION = 0.95
TARGET_SCAN_SHARE = 0.15  # the personal-data scan's share of the whole ingest's wall

WARMUP_CODE = "from prefect import flow\nflow(lambda: None, name='warm-up')()\n"

# ---------------------------------------------------------------------------------------------------
# Data


def generate(path: Path, rows: int, seed: int) -> SynthManifest:
    return write_synth(path, SOURCE, rows, seed=seed, pair_bytes=PAIR_BYTES)


def text_bytes_per_pair(path: Path, sample: int = 20_000) -> list[int]:
    """UTF-8 bytes of context contents + response1 + response2, for the first `sample` readable rows."""
    sizes = []
    with path.open("rb") as f:
        for line in f:
            try:
                row = orjson.loads(line)
                n = sum(len(m["content"].encode()) for m in row["context"])
                n += len(row["response1"].encode()) + len(row["response2"].encode())
            except Exception:  # noqa: BLE001 - the planted bad rows: not part of the size figure
                continue
            sizes.append(n)
            if len(sizes) >= sample:
                break
    return sizes


# ---------------------------------------------------------------------------------------------------
# The whole ingest, in a child process


@dataclass
class IngestRun:
    prefect_setup_s: float  # a first flow in a new PREFECT_HOME: creating Prefect's own database, once
    wall_s: float
    peak_rss_kib: int  # RUSAGE_CHILDREN: the largest of the child and whatever it waited for
    summary: dict


def child_env(workdir: Path, threshold: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CURATE_", "PREFECT_"))}
    env.update(
        DO_NOT_TRACK="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        HF_HUB_OFFLINE="1",
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120",
        PREFECT_HOME=str(workdir / "prefect-home"),
        CURATE_NEAR_DUP_THRESHOLD=str(threshold),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    return env


def run_ingest(data: Path, warehouse: Path, workdir: Path, threshold: float) -> IngestRun:
    for stale in (warehouse, Path(str(warehouse) + ".wal")):  # a warehouse left over would make rows "already ingested"
        stale.unlink(missing_ok=True)
    env = child_env(workdir, threshold)
    # A user's PREFECT_HOME already holds Prefect's database; a new one is created and migrated by the
    # first flow (about 10 s here). Do that once, apart, so the ingest's wall time is the ingest's.
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", WARMUP_CODE], cwd=REPO, env=env, check=True, capture_output=True)
    setup = time.perf_counter() - started
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    # What a user runs: the CLI with its defaults (it starts Prefect's temporary API itself).
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("curate")), "ingest", "--source", SOURCE, "--path", str(data),
         "--warehouse", str(warehouse), "--json"],
        cwd=REPO, env=env, capture_output=True, text=True,
    )
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-10000:])
        raise SystemExit(f"the ingest child failed with exit code {proc.returncode}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-10000:])
        raise SystemExit("the ingest child printed no summary")
    if before >= peak:  # the warm-up child is far smaller; never report its peak as the ingest's
        print(f"warning: an earlier child peaked at {before} KiB, the ingest's own peak is not visible",
              file=sys.stderr)
    return IngestRun(setup, wall, peak, json.loads(lines[-1]))


# ---------------------------------------------------------------------------------------------------
# Ground truth: pair ids per row, the documents the near-dup step sees, true Jaccard of planted pairs


@dataclass
class Planted:
    row: int
    original: int
    edit_rate: float
    pair_id: str
    original_pair_id: str
    jaccard: float = 0.0


@dataclass
class Truth:
    row_pair: dict[int, str]  # 0-based row -> pair id, valid rows only
    doc_ids: list[str]  # the near-dup step's documents: first sighting of each pair id, in file order
    doc_texts: list[str]
    planted: list[Planted] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    copy_of: dict[str, str] = field(default_factory=dict)  # planted copy's pair id -> its original's

    def group(self, pair_id: str) -> str:
        return self.copy_of.get(pair_id, pair_id)


def prepare_file(data: Path) -> Truth:
    """Read and prepare the file exactly as the flow does, keeping each valid row's line number."""
    source, settings = get_source(SOURCE), get_settings()
    row_pair: dict[int, str] = {}
    doc_ids: list[str] = []
    doc_texts: list[str] = []
    seen: set[str] = set()
    for batch in read_local(data, BATCH):
        prepared = prepare_batch(batch, source, settings, str(data))
        # prepare_batch keeps the valid rows in order: they are the positions not quarantined.
        bad = {q.position for q in prepared.quarantined}
        valid_positions = [p for p in batch.positions if p not in bad]
        assert len(valid_positions) == len(prepared.pairs), "positions and prepared pairs do not line up"
        for position, pair, pid in zip(valid_positions, prepared.pairs, prepared.pair_ids):
            row_pair[int(position.rsplit(":", 1)[1]) - 1] = pid
            if pid not in seen:  # exact duplicates never reach the near-dup step
                seen.add(pid)
                doc_ids.append(pid)
                doc_texts.append(near_dup_text(pair.history, pair.response_a, pair.response_b))
    return Truth(row_pair, doc_ids, doc_texts)


def true_jaccard(a: str, b: str) -> float:
    hashes, offsets = minhash.shingle_hashes([a, b])
    sa = np.unique(hashes[offsets[0] : offsets[1]])
    sb = np.unique(hashes[offsets[1] : offsets[2]])
    union = len(np.union1d(sa, sb))
    return len(np.intersect1d(sa, sb, assume_unique=True)) / union if union else 1.0


def plant_truth(truth: Truth, manifest: SynthManifest) -> None:
    text_of = dict(zip(truth.doc_ids, truth.doc_texts))
    for row, original, rate in manifest.near_duplicates:
        pid, opid = truth.row_pair.get(row), truth.row_pair.get(original)
        if pid is None or opid is None:
            truth.skipped["copy or original quarantined / absent"] += 1
            continue
        if pid == opid:
            truth.skipped["edit left the pair identical (an exact duplicate)"] += 1
            continue
        truth.planted.append(Planted(row, original, rate, pid, opid, true_jaccard(text_of[pid], text_of[opid])))
        truth.copy_of[pid] = opid


# ---------------------------------------------------------------------------------------------------
# Quality of a set of near-duplicate links {pair id: kept pair id}


@dataclass
class Quality:
    links: int
    correct_links: int
    planted_all: int
    found_all: int
    planted_above: int
    found_above: int
    missed_jaccards: list[float]  # true Jaccard of the planted pairs not found

    @property
    def precision(self) -> float:
        return self.correct_links / self.links if self.links else 1.0

    @property
    def recall_above(self) -> float:
        return self.found_above / self.planted_above if self.planted_above else 1.0

    @property
    def recall_all(self) -> float:
        return self.found_all / self.planted_all if self.planted_all else 1.0


def quality(truth: Truth, flags: dict[str, str], threshold: float, docs: set[str] | None = None) -> Quality:
    """Precision over the links made; recall over the planted pairs (both docs within `docs`, if given).

    A link is right when both ends are the same planted original: copy -> original, or copy -> another
    copy of it. A planted pair is found when the copy is linked to its original, to the original's own
    kept pair, or to another copy of the original.
    """
    correct = sum(truth.group(p) == truth.group(k) for p, k in flags.items())
    planted = [p for p in truth.planted if docs is None or (p.pair_id in docs and p.original_pair_id in docs)]

    def found(p: Planted) -> bool:
        kept = flags.get(p.pair_id)
        return kept is not None and (truth.group(kept) == p.original_pair_id or kept == flags.get(p.original_pair_id))

    above = [p for p in planted if p.jaccard >= threshold]
    missed = sorted(p.jaccard for p in planted if not found(p))
    return Quality(
        links=len(flags),
        correct_links=correct,
        planted_all=len(planted),
        found_all=sum(map(found, planted)),
        planted_above=len(above),
        found_above=sum(map(found, above)),
        missed_jaccards=missed,
    )


def warehouse_links(path: Path) -> dict[str, str]:
    with Warehouse(path, read_only=True) as wh:
        return dict(wh.query("SELECT pair_id, kept_pair_id FROM near_duplicates"))


# ---------------------------------------------------------------------------------------------------
# The near-dup step in-process: ours vs datasketch


@dataclass
class Timing:
    docs: int
    shingle_s: float = 0.0
    hash_s: float = 0.0  # signatures / MinHash objects
    lsh_s: float = 0.0  # index look-ups, verification and inserts
    convert_s: float = 0.0  # datasketch only: our uint64 shingles to bytes objects (not counted)
    flags: dict[str, str] = field(default_factory=dict)

    @property
    def total_s(self) -> float:
        return self.shingle_s + self.hash_s + self.lsh_s


def time_ours(ids: list[str], texts: list[str], num_perm: int, threshold: float) -> Timing:
    """As the flow does it: batches of BATCH docs, each shingled and hashed CHUNK docs at a time."""
    t = Timing(len(texts))
    index = NearDupIndex(num_perm, threshold)
    for s in range(0, len(texts), BATCH):
        batch = texts[s : s + BATCH]
        parts = []
        for c in range(0, len(batch), CHUNK):
            t0 = time.perf_counter()
            hashes, offsets = minhash.shingle_hashes(batch[c : c + CHUNK])
            t1 = time.perf_counter()
            parts.append(minhash.signatures(hashes, offsets, num_perm))
            t2 = time.perf_counter()
            t.shingle_s += t1 - t0
            t.hash_s += t2 - t1
        t2 = time.perf_counter()
        verdicts = index.assign(ids[s : s + BATCH], np.concatenate(parts))
        t.lsh_s += time.perf_counter() - t2
        t.flags.update((i, d) for i, d in zip(ids[s : s + BATCH], verdicts.duplicate_of) if d is not None)
    return t


def time_pii_scan(warehouse: Path) -> float:
    """Seconds `scan_pairs` takes over every pair the warehouse holds, read first (not timed)."""
    import duckdb

    from tasks.ingest.pii_facts import scan_pairs

    with duckdb.connect(str(warehouse), read_only=True) as con:
        pairs = con.sql("SELECT pair_id, history, response_a, response_b FROM candidate_pairs").to_arrow_table()
    t0 = time.perf_counter()
    scan_pairs(pairs)
    return time.perf_counter() - t0


def shingle_bytes(hashes: np.ndarray, offsets: np.ndarray) -> list[list[bytes]]:
    """Each doc's 64-bit shingle hashes as 8-byte `bytes` objects: datasketch's input type."""
    out = []
    for i in range(len(offsets) - 1):
        raw = hashes[offsets[i] : offsets[i + 1]].tobytes()
        out.append([raw[k : k + 8] for k in range(0, len(raw), 8)])
    return out


def time_datasketch(ids: list[str], texts: list[str], threshold: float) -> Timing:
    """MinHash(num_perm=128) + MinHashLSH, keep-first: query each doc, keep it unless a verified match."""
    from datasketch import MinHash, MinHashLSH

    t = Timing(len(texts))
    lsh = MinHashLSH(threshold=threshold, num_perm=BASELINE_PERMS)
    kept: dict[str, MinHash] = {}
    for s in range(0, len(texts), BATCH):
        batch = texts[s : s + BATCH]
        docs: list[list[bytes]] = []
        for c in range(0, len(batch), CHUNK):  # the same shingles as ours, made the same way
            t0 = time.perf_counter()
            hashes, offsets = minhash.shingle_hashes(batch[c : c + CHUNK])
            t1 = time.perf_counter()
            docs += shingle_bytes(hashes, offsets)
            t.shingle_s += t1 - t0
            t.convert_s += time.perf_counter() - t1
        t2 = time.perf_counter()
        # MinHash.generator is datasketch's own way to make many: one permutation setup, update_batch each.
        sketches = list(MinHash.generator(docs, num_perm=BASELINE_PERMS))
        t3 = time.perf_counter()
        for pid, m in zip(ids[s : s + BATCH], sketches):
            best = max(((m.jaccard(kept[k]), k) for k in lsh.query(m)), default=(0.0, None))
            if best[0] >= threshold:
                t.flags[pid] = best[1]
            else:
                lsh.insert(pid, m)
                kept[pid] = m
        t.hash_s += t3 - t2
        t.lsh_s += time.perf_counter() - t3
        del docs, sketches
    return t


# ---------------------------------------------------------------------------------------------------
# Output


def gib(kib: int) -> str:
    return f"{kib / 1024**2:.2f} GiB ({kib / 1024:.0f} MiB)"


def print_quality(label: str, q: Quality, threshold: float) -> None:
    print(f"  {label}")
    print(f"    precision                         {q.precision:.4f}  ({q.correct_links}/{q.links} links are planted relations)")
    print(f"    recall, true Jaccard >= {threshold:<4}      {q.recall_above:.4f}  ({q.found_above}/{q.planted_above})")
    print(f"    recall, all planted pairs         {q.recall_all:.4f}  ({q.found_all}/{q.planted_all})")
    if q.missed_jaccards:
        m = q.missed_jaccards
        print(f"    missed pairs' true Jaccard        min {m[0]:.3f}, median {statistics.median(m):.3f}, max {m[-1]:.3f}")


def print_timing(label: str, t: Timing, shingle_s: float) -> None:
    print(f"  {label} ({t.docs} docs)")
    print(f"    shingling (shared, timed once)    {shingle_s:8.2f} s")
    print(f"    hashing                           {t.hash_s:8.2f} s")
    print(f"    LSH index + verify                {t.lsh_s:8.2f} s")
    if t.convert_s:
        print(f"    (shingles -> bytes, not counted)  {t.convert_s:8.2f} s")
    print(f"    end to end                        {shingle_s + t.hash_s + t.lsh_s:8.2f} s"
          f"   ({t.docs / (shingle_s + t.hash_s + t.lsh_s):,.0f} docs/s)")


def target(name: str, measured: str, ok: bool | None) -> None:
    verdict = "n/a " if ok is None else "PASS" if ok else "FAIL"
    print(f"  {verdict}  {name:<42} {measured}")


# ---------------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=100_000, help="synthetic rows (default 100000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workdir", type=Path, help="keep the data and warehouse here (default: a temp dir, removed)")
    p.add_argument("--baseline-docs", type=int, help="run datasketch on the first N docs only, extrapolate linearly")
    p.add_argument("--skip-baseline", action="store_true", help="do not run datasketch")
    p.add_argument("--threshold", type=float, help="near-dup Jaccard threshold (default: the settings', 0.8)")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    settings = get_settings()
    threshold = args.threshold if args.threshold is not None else settings.near_dup_threshold
    num_perm = settings.minhash_perms
    tmp = None
    if args.workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ingest-bench-")
        workdir = Path(tmp.name)
    else:
        workdir = args.workdir.resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / f"helpsteer3-synth-{args.rows}-s{args.seed}.jsonl"
    warehouse = workdir / "warehouse.duckdb"

    print(f"ingest benchmark: {args.rows} rows, seed {args.seed}, threshold {threshold}, "
          f"{num_perm} MinHash bins, {os.cpu_count()} CPUs, workdir {workdir}")

    # 1. Data (not timed as part of any target).
    t0 = time.perf_counter()
    manifest = generate(data, args.rows, args.seed)
    gen_s = time.perf_counter() - t0
    sizes = text_bytes_per_pair(data)
    print("\nDATA")
    print(f"  generated in {gen_s:.1f} s: {data.stat().st_size / 1e6:.0f} MB of JSONL; planted "
          f"{len(manifest.near_duplicates)} near dups, {len(manifest.exact_duplicates)} exact dups, "
          f"{len(manifest.bad_rows)} bad rows")
    print(f"  text bytes per pair (context + response1 + response2, {len(sizes)} rows): "
          f"median {statistics.median(sizes):,.0f}, mean {statistics.fmean(sizes):,.0f}, "
          f"p90 {np.percentile(sizes, 90):,.0f}")

    # 2. The whole ingest in a child process.
    run = run_ingest(data, warehouse, workdir, threshold)
    s = run.summary
    print("\nWHOLE INGEST (`curate ingest --json` in a child process)")
    print(f"  Prefect first-use setup (new home)  {run.prefect_setup_s:8.2f} s   (once per PREFECT_HOME, not counted below)")
    print(f"  wall, child process                 {run.wall_s:8.2f} s   (CLI start-up and Prefect's temporary API included)")
    print(f"  flow's own `seconds`                {s['seconds']:8.2f} s")
    print(f"  peak RSS (RUSAGE_CHILDREN)          {gib(run.peak_rss_kib)}")
    print(f"  pairs/s over child wall             {s['read'] / run.wall_s:8,.0f}")
    print(f"  pairs/s over flow seconds           {s['read'] / s['seconds']:8,.0f}")
    print("  counts: " + ", ".join(f"{k} {s[k]}" for k in
          ("read", "valid", "quarantined_rows", "exact_duplicates", "near_duplicates", "new_pairs")))

    # 2b. The personal-data scan the ingest ran on its new pairs, timed again alone over the same pairs (as the
    # warehouse holds them): its share of the whole ingest's wall (target: at most 15%).
    scan_s = time_pii_scan(warehouse)
    print(f"  personal-data scan of the new pairs {scan_s:8.2f} s   ({scan_s / run.wall_s:.1%} of the child's wall, "
          f"{scan_s / s['seconds']:.1%} of the flow's seconds; timed alone, in this process)")

    # 3. Near-dup quality of what the flow wrote.
    t0 = time.perf_counter()
    truth = prepare_file(data)
    plant_truth(truth, manifest)
    truth_s = time.perf_counter() - t0
    above = sum(p.jaccard >= threshold for p in truth.planted)
    links = warehouse_links(warehouse)
    wh_q = quality(truth, links, threshold)
    print(f"\nNEAR-DUP QUALITY (ground truth rebuilt in {truth_s:.1f} s)")
    print(f"  planted near dups {len(manifest.near_duplicates)}: usable {len(truth.planted)}, "
          f"true Jaccard >= {threshold}: {above}, below: {len(truth.planted) - above}")
    for reason, n in truth.skipped.items():
        print(f"  skipped {n}: {reason}")
    if truth.planted:
        js = [p.jaccard for p in truth.planted]
        print(f"  true Jaccard of planted pairs: min {min(js):.3f}, median {statistics.median(js):.3f}, max {max(js):.3f}")
    print_quality("ours, from the warehouse's near_duplicates table", wh_q, threshold)

    # 4. The near-dup step in-process, ours vs datasketch, on the documents the flow's step saw.
    ids, texts = truth.doc_ids, truth.doc_texts
    print(f"\nNEAR-DUP STEP, in-process, {len(texts)} docs (valid pairs, exact duplicates removed, file order)")
    ours = time_ours(ids, texts, num_perm, threshold)
    print_timing(f"ours: shingle_hashes + signatures({num_perm}) + NearDupIndex.assign, batches of {BATCH}",
                 ours, ours.shingle_s)
    print_quality("ours, in-process", quality(truth, ours.flags, threshold), threshold)

    ratio = None
    if not args.skip_baseline:
        n = min(args.baseline_docs or len(texts), len(texts))
        ds = time_datasketch(ids[:n], texts[:n], threshold)
        # Shingling is shared and measured once (ours, all docs); only datasketch's own work scales.
        own_s = (ds.hash_s + ds.lsh_s) * len(texts) / n
        ds_total = ours.shingle_s + own_s
        ratio = ds_total / ours.total_s
        print_timing(f"datasketch {_ds_version()}: MinHash({BASELINE_PERMS}) via update_batch + MinHashLSH({threshold}), "
                     "query then insert", ds, ours.shingle_s * n / len(texts))
        note = "" if n == len(texts) else f"  EXTRAPOLATED linearly from {n} of {len(texts)} docs"
        print(f"  datasketch end to end, all docs     {ds_total:8.2f} s{note}")
        print(f"  ratio datasketch / ours, end to end {ratio:8.2f}x{note}")
        print(f"  ratio, hashing + LSH only           {own_s / (ours.hash_s + ours.lsh_s):8.2f}x{note}")
        print_quality("datasketch" + (f" (first {n} docs)" if n < len(texts) else ""),
                      quality(truth, ds.flags, threshold, set(ids[:n])), threshold)

    # 5. Targets.
    print("\nTARGETS")
    target(f"whole ingest wall <= {TARGET_WALL_S:.0f} s (the CLI)", f"{run.wall_s:.2f} s (flow's own {s['seconds']:.2f} s)",
           run.wall_s <= TARGET_WALL_S)
    target("peak RSS <= 2 GB", gib(run.peak_rss_kib), run.peak_rss_kib * 1024 <= TARGET_RSS_BYTES)
    target("personal-data scan <= 15% of the ingest's wall", f"{scan_s / run.wall_s:.1%}",
           scan_s / run.wall_s <= TARGET_SCAN_SHARE)
    target("near-dup step >= 5x faster than datasketch",
           "skipped" if ratio is None else f"{ratio:.2f}x", None if ratio is None else ratio >= TARGET_SPEEDUP)
    target(f"recall (true Jaccard >= {threshold}) >= 0.95", f"{wh_q.recall_above:.4f}", wh_q.recall_above >= TARGET_RECALL)
    target("precision >= 0.95", f"{wh_q.precision:.4f}", wh_q.precision >= TARGET_PRECISION)
    print(f"  (on {os.cpu_count()} CPUs; recall over all planted pairs {wh_q.recall_all:.4f})")
    if tmp is not None:
        tmp.cleanup()


def _ds_version() -> str:
    try:
        import datasketch

        return datasketch.__version__
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    main()
