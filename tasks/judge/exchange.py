"""The judge exchange folder: how GPU workers judge without touching the warehouse.

DuckDB has one writer, and GPU workers may run on other hosts. So the orchestrating flow writes each
shard's work (the pair texts and what the cache already knows) to a Parquet file, a worker judges from that
file alone and writes its judgments as Parquet batches beside it, and the orchestrator merges those into
the warehouse. Every file is written to a temporary name and renamed, so a reader never sees half of one.

    <root>/plans/<plan_id>/shard-<i>-of-<n>.parquet                      the work of one shard
    <root>/results/<plan_id>/shard-<i>-of-<n>/<run_id>-<seq>.parquet     judgments, one file per batch
    <root>/results/<plan_id>/shard-<i>-of-<n>/<run_id>.run.json          the worker run's record
    <root>/results/<plan_id>/shard-<i>-of-<n>/<run_id>.heartbeat         touched while the worker lives
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from common.errors import InvalidInputError, NotFoundError
from tasks.judge.run import JUDGMENT_SCHEMA, JudgmentState, PairText, States

STATE_TYPE = pa.list_(pa.struct([
    ("order", pa.string()), ("sample_index", pa.int32()), ("status", pa.string()), ("attempts", pa.int32()),
    ("margin_a", pa.float64()), ("score_a", pa.int32()), ("score_b", pa.int32()), ("requests", pa.int32()),
    ("failure_reason", pa.string()),
]))
_STATE_FIELDS = JudgmentState._fields
WORK_SCHEMA = pa.schema([
    ("pair_id", pa.string()), ("history", pa.string()), ("response_a", pa.string()), ("response_b", pa.string()),
    ("states", STATE_TYPE),
])


def shard_label(index: int, count: int) -> str:
    return f"shard-{index}-of-{count}"


def plan_id(config_id: str, strategy: str, pair_ids: list[str]) -> str:
    """Names a plan by what it asks: the same pending work planned twice lands in the same folder."""
    h = hashlib.blake2b(digest_size=8)
    h.update(f"{config_id}\0{strategy}\0".encode())
    for pid in pair_ids:
        h.update(pid.encode() + b"\0")
    return h.hexdigest()


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    _atomic_write(path, lambda tmp: tmp.write_text(json.dumps(data, default=str, indent=1)))


@dataclass(frozen=True)
class ShardWork:
    """One shard's work as a worker reads it."""

    plan_id: str
    shard: str  # "i/n"
    config: dict[str, Any]  # the JudgeConfig fields the orchestrator chose
    strategy: str
    pairs: list[PairText]
    states: States

    @property
    def label(self) -> str:
        index, count = self.shard.split("/")
        return shard_label(int(index), int(count))


def work_path(root: Path, plan: str, index: int, count: int) -> Path:
    return Path(root) / "plans" / plan / f"{shard_label(index, count)}.parquet"


def results_dir(root: Path, plan: str, label: str) -> Path:
    return Path(root) / "results" / plan / label


def write_work(path: Path, *, plan: str, shard: str, config: dict[str, Any], strategy: str,
               pairs: list[PairText], states: States) -> None:
    by_pair: dict[str, list[dict[str, Any]]] = {}
    for (pid, order, sample), state in states.items():
        by_pair.setdefault(pid, []).append({"order": order, "sample_index": sample, **state._asdict()})
    table = pa.table({
        "pair_id": [p[0] for p in pairs], "history": [json.dumps(p[1], ensure_ascii=False) for p in pairs],
        "response_a": [p[2] for p in pairs], "response_b": [p[3] for p in pairs],
        "states": [by_pair.get(p[0], []) for p in pairs],
    }, schema=WORK_SCHEMA)
    meta = {"plan_id": plan, "shard": shard, "config": config, "strategy": strategy}
    table = table.replace_schema_metadata({b"curator.shard_work": json.dumps(meta).encode()})
    _atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def read_work(path: Path) -> ShardWork:
    path = Path(path)
    if not path.exists():
        raise NotFoundError(f"no shard work at {path}: is the exchange folder shared with this worker?")
    table = pq.read_table(path)
    raw = (table.schema.metadata or {}).get(b"curator.shard_work")
    if raw is None:
        raise InvalidInputError(f"{path} is not a shard work file (no curator.shard_work metadata)")
    meta = json.loads(raw)
    rows = table.to_pylist()
    pairs = [(r["pair_id"], json.loads(r["history"]), r["response_a"], r["response_b"]) for r in rows]
    states: States = {}
    for r in rows:
        for s in r["states"]:
            states[(r["pair_id"], s["order"], s["sample_index"])] = _state(s)
    return ShardWork(meta["plan_id"], meta["shard"], meta["config"], meta["strategy"], pairs, states)


def _state(row: dict[str, Any]) -> JudgmentState:
    """A state from a work or result file's row (files written before `requests` existed lack it)."""
    return JudgmentState(row["status"], row["attempts"], row.get("margin_a"), row.get("score_a"), row.get("score_b"),
                         row.get("requests") or 0, row.get("failure_reason"))


def fold_results(states: States, folder: Path) -> int:
    """Overlay the judgments already written in `folder` (by an earlier attempt at this shard) onto
    `states`, as the warehouse would merge them: an 'ok' is final, else the most attempts. Returns files read."""
    files = sorted(Path(folder).glob("*.parquet")) if Path(folder).exists() else []
    for f in files:
        table = pq.read_table(f)
        for r in table.select([c for c in ("pair_id", "order", "sample_index", *_STATE_FIELDS)
                               if c in table.column_names]).to_pylist():
            key = (r["pair_id"], r["order"], r["sample_index"])
            old = states.get(key)
            if old is not None and (old.status == "ok" or (r["status"] != "ok" and r["attempts"] < old.attempts)):
                continue
            states[key] = _state(r)
    return len(files)


class ResultWriter:
    """Writes a worker's judgment batches as numbered Parquet files in its shard's results folder."""

    def __init__(self, folder: Path, run_id: str):
        self.folder = Path(folder)
        self.run_id = run_id
        self.seq = 0
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self.seq += 1
        path = self.folder / f"{self.run_id}-{self.seq:05d}.parquet"
        _atomic_write(path, lambda tmp: pq.write_table(table.cast(JUDGMENT_SCHEMA), tmp))
        self.rows += table.num_rows

    def record(self, data: dict[str, Any]) -> None:
        """The run's record (started, then finished), merged into judge_runs with its judgments."""
        _write_json(self.folder / f"{self.run_id}.run.json", data)


class Heartbeat:
    """Touches `<run_id>.heartbeat` every `every` seconds while a worker judges, so the orchestrator can
    tell a slow shard from a dead worker."""

    def __init__(self, folder: Path, run_id: str, every: float = 5.0):
        self.path = Path(folder) / f"{run_id}.heartbeat"
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="judge-heartbeat")

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.path.write_text(str(time.time()))

    def __enter__(self) -> Heartbeat:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(str(time.time()))  # alive from the moment the context is entered
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def last_heartbeat(folder: Path) -> float | None:
    """Unix time of the latest heartbeat of any run in a shard's results folder."""
    beats = [p.stat().st_mtime for p in Path(folder).glob("*.heartbeat")] if Path(folder).exists() else []
    return max(beats) if beats else None


@dataclass(frozen=True)
class ResultFile:
    key: str  # path relative to the exchange root: the merge's identity for this file
    path: Path


def result_files(root: Path) -> list[ResultFile]:
    """Every judgment batch in the exchange folder, oldest name first within a shard."""
    base = Path(root) / "results"
    if not base.exists():
        return []
    return [ResultFile(str(p.relative_to(root)), p) for p in sorted(base.glob("*/*/*.parquet"))]


def run_records(root: Path) -> list[dict[str, Any]]:
    base = Path(root) / "results"
    return [json.loads(p.read_text()) for p in sorted(base.glob("*/*/*.run.json"))] if base.exists() else []


def file_digest(path: Path) -> str:
    return hashlib.blake2b(Path(path).read_bytes(), digest_size=16).hexdigest()
