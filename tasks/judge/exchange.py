"""The judge exchange: how GPU workers judge without touching the warehouse, on any host.

DuckDB has one writer, and GPU workers may run on other hosts that share no disk with the orchestrator. So
the orchestrating flow writes each shard's work (the pair texts and what the cache already knows) to a
Parquet file, a worker judges from that file alone and writes its judgments as Parquet batches beside it,
and the orchestrator merges those into the warehouse. The exchange lives at any fsspec URL: a local folder
by default, or object storage (`s3://bucket/prefix`, any S3-compatible server) for multi-host pools. Every
file appears whole or not at all: a local file is written to a temporary name and renamed, an object is
one PUT.

    <root>/plans/<plan_id>/manifest.parquet                              what the orchestrator planned
    <root>/plans/<plan_id>/shard-<i>-of-<n>.parquet                      the work of one shard
    <root>/results/<plan_id>/shard-<i>-of-<n>/<run_id>-<seq>[.<sig>].parquet   judgments, one file per batch
    <root>/results/<plan_id>/shard-<i>-of-<n>/<run_id>.run.json          the worker run's record
    <root>/results/<plan_id>/shard-<i>-of-<n>/<run_id>.heartbeat         rewritten while the worker lives
    <root>/quarantine/<path of a file>(.reason)                          what the merge could not trust

Nothing read back is trusted (`exchange_checks.py`): a work file carries digests of its texts and states, which
a worker checks before judging; every result row is checked against its shard's plan before it is merged, an
unreadable or forged file is moved aside under `quarantine/` with its reason; and with a key shared by the
orchestrator and the workers (`CURATE_JUDGE_EXCHANGE_KEY`) each plan's manifest and work files are signed by the
orchestrator, result files and run records by the worker (bound to the plan and the texts it judged), a work file
that is not its shard of the manifest is refused by the worker before it judges, and the merge takes results
only for the manifest's pairs and texts.

Liveness never reads modification times (clocks and timestamps differ across hosts and object stores): a
heartbeat holds a counter the worker increments, and the orchestrator notes, on its own clock, when it last
saw the counter change.

Credentials: for object storage, fsspec's own defaults (the environment: `AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, ...), or storage options as JSON in `CURATE_JUDGE_EXCHANGE_OPTIONS`
or in the Prefect Secret block named by `CURATE_JUDGE_EXCHANGE_BLOCK`. They are passed to fsspec only,
never logged or stored.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from common.errors import InvalidInputError, NotFoundError
from tasks.judge.config import JudgeConfig
from tasks.judge.exchange_checks import (
    BAD_SIGNATURE,
    CHANGED,
    KEY_ENV,
    KEY_ON_ORCHESTRATOR_ONLY,
    KEY_ON_WORKER_ONLY,
    MANIFEST_COLUMNS,
    STATE_COLUMNS,
    TEXT_COLUMNS,
    WANTED_COLUMNS,
    Asked,
    ShardPlan,
    manifest_key,
    manifest_problem,
    pair_digests,
    plan_key,
    record_signature,
    results_key,
    signature,
    signature_holds,
    signed_problem,
    table_digest,
    work_problem,
)
from tasks.judge.run import JUDGMENT_SCHEMA, JudgmentState, States, Wanted
from tasks.judge.strategies import Slot, parse_strategy
from warehouse.judging import PairText
from warehouse.runs import RunOutcome

_log = logging.getLogger(__name__)

STATE_TYPE = pa.list_(pa.struct([
    ("order", pa.string()), ("sample_index", pa.int32()), ("status", pa.string()), ("attempts", pa.int32()),
    ("margin_a", pa.float64()), ("score_a", pa.int32()), ("score_b", pa.int32()), ("requests", pa.int32()),
    ("failure_reason", pa.string()),
]))
_STATE_FIELDS = JudgmentState._fields
WANTED_TYPE = pa.list_(pa.struct([("order", pa.string()), ("sample_index", pa.int32())]))
WORK_SCHEMA = pa.schema([
    ("pair_id", pa.string()), ("history", pa.string()), ("response_a", pa.string()), ("response_b", pa.string()),
    ("states", STATE_TYPE),
    # the judgments a round of a run in rounds asks of the pair, and those alone; null: the strategy's own
    ("wanted", WANTED_TYPE),
])
OPTIONS_ENV = "CURATE_JUDGE_EXCHANGE_OPTIONS"
BLOCK_ENV = "CURATE_JUDGE_EXCHANGE_BLOCK"


def storage_options() -> dict[str, Any]:
    """fsspec storage options from `CURATE_JUDGE_EXCHANGE_OPTIONS` (JSON) or the Prefect Secret block named by
    `CURATE_JUDGE_EXCHANGE_BLOCK`; none when neither is set (fsspec then reads the environment itself)."""
    raw = os.environ.get(OPTIONS_ENV)
    block = os.environ.get(BLOCK_ENV)
    if not raw and block:
        from prefect.blocks.system import Secret

        try:
            raw = Secret.load(block).get()
        except ValueError:
            raise NotFoundError(f"no Prefect Secret block {block!r} ({BLOCK_ENV}) with the exchange's storage "
                                "options") from None
    if not raw:
        return {}
    try:
        options = raw if isinstance(raw, dict) else json.loads(raw)
    except ValueError:
        raise InvalidInputError(f"the exchange's storage options ({OPTIONS_ENV} or block {block!r}) are not "
                                "JSON") from None  # the value itself is never echoed: it holds credentials
    if not isinstance(options, dict):
        raise InvalidInputError("the exchange's storage options must be a JSON object")
    return options


def shared_secret() -> str | None:
    """The key the orchestrator and its GPU workers share to sign the exchange (`CURATE_JUDGE_EXCHANGE_KEY`);
    None: files are checked against their plans but not authenticated."""
    return os.environ.get(KEY_ENV) or None


class Exchange:
    """The exchange at a URL (a local folder or object storage), and paths in it (strings, '/'-separated)."""

    def __init__(self, url: str | Path, options: dict[str, Any] | None = None):
        url = str(url)
        if "://" not in url:
            url = str(Path(url).resolve())  # workers get absolute paths, whatever their working directory
        self.url = url.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.url, **(storage_options() if options is None else options))
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.local = "file" in protocols or "local" in protocols

    def __repr__(self) -> str:
        return f"Exchange({self.url!r})"  # the URL only: options may hold credentials

    @classmethod
    def of_work(cls, work: str | Path, options: dict[str, Any] | None = None) -> tuple[Exchange, str]:
        """The exchange a work file's URL lies in, and the file's path in it."""
        text = str(work)
        head, sep, _ = text.rpartition("/plans/")
        if not sep:
            raise InvalidInputError(f"{text} is not a shard work file's location (<exchange>/plans/<plan>/<file>)")
        ex = cls(head, options)
        return ex, ex.path(text[len(head) + 1:])

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *[p.strip("/") for p in parts]])

    def url_of(self, path: str) -> str:
        return path if self.local else self.fs.unstrip_protocol(path)

    def relative(self, path: str) -> str:
        return path[len(self.root.rstrip("/")) + 1:]

    def put(self, path: str, data: bytes) -> None:
        """Write a whole file: a local one by a temporary name and a rename, an object in one PUT."""
        if self.local:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        else:
            self.fs.pipe_file(path, data)

    def get(self, path: str) -> bytes:
        return self.fs.cat_file(path)

    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def move_aside(self, path: str, reason: str) -> str:
        """Move a file the merge cannot trust to `quarantine/` (its path kept below), with its reason beside
        it; returns where it went. Later merges never list it again."""
        target = self.path("quarantine", self.relative(path))
        try:
            self.put(target, self.get(path))
        except FileNotFoundError:
            pass
        self.put(target + ".reason", reason.encode())
        self.fs.rm_file(path)
        return target

    def glob(self, pattern: str) -> list[str]:
        """Matching paths, sorted; a local temporary file (a write in progress) is never listed."""
        self.fs.invalidate_cache()  # object listings are cached by fsspec: other hosts write here
        return sorted(p for p in self.fs.glob(pattern) if not p.rsplit("/", 1)[-1].startswith("."))


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)  # as the warehouse records times: UTC, naive


def shard_label(index: int, count: int) -> str:
    return f"shard-{index}-of-{count}"


def plan_id(config_id: str, strategy: str, pair_ids: list[str], wanted: Wanted | None = None,
            reopened: bool = False) -> str:
    """Names a plan by what it asks: the same pending work planned twice lands in the same folder (a round's
    plan by the judgments it asks of each pair too: another round of the same pairs is another plan; a plan that
    reopened judgments at the attempt limit is another plan too, so its workers fold no result of before)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(f"{config_id}\0{strategy}\0".encode() + (b"reopened\0" if reopened else b""))
    for pid in pair_ids:
        h.update(pid.encode() + b"\0")
        if wanted is not None:
            h.update("".join(f"{order}{sample}," for order, sample in wanted[pid]).encode() + b"\0")
    return h.hexdigest()


def _parquet_bytes(table: pa.Table, **kwargs: Any) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, **kwargs)
    return buffer.getvalue()


def _read_parquet(ex: Exchange, path: str) -> pa.Table:
    return pq.read_table(io.BytesIO(ex.get(path)))


class UntrustedWorkError(InvalidInputError):
    """A work file this side must not judge or trust: changed since it was written, signed on one side only, or
    not its shard of the plan's manifest (`problem`: why, as `exchange_checks` says)."""

    def __init__(self, problem: str):
        super().__init__(f"this shard's work file is refused before anything is judged: {problem}")
        self.problem = problem
        keys = any(k in problem for k in (KEY_ON_ORCHESTRATOR_ONLY, KEY_ON_WORKER_ONLY, BAD_SIGNATURE))
        self.hint = (f"set the same {KEY_ENV} on the orchestrator and on every GPU worker (or on none)" if keys
                     else "rerun the pipeline: it writes the work file again")


_WORK_META = b"curator.shard_work"
_MANIFEST_META = b"curator.plan_manifest"
MANIFEST_SCHEMA = pa.schema([("pair_id", pa.string()), ("shard", pa.int32()), ("texts", pa.string()),
                             ("wanted", WANTED_TYPE)])


def manifest_path(ex: Exchange, plan: str) -> str:
    return ex.path("plans", plan, "manifest.parquet")


@dataclass(frozen=True)
class PlanManifest:
    """What the orchestrator planned, as it committed it: its metadata (plan, configuration, strategy, shards and
    each shard's digests) and, by shard, each pair id with the digest of its texts and the judgments asked."""

    meta: dict[str, Any]
    shards: dict[int, dict[str, tuple[str, Asked]]]


def _asked(wanted: list[dict[str, Any]] | None) -> Asked:
    return None if wanted is None else tuple((w["order"], w["sample_index"]) for w in wanted)


def read_manifest(ex: Exchange, plan: str, secret: str | None) -> PlanManifest | None:
    """A plan's manifest once it is unchanged and signed exactly when this side holds the key (else
    `UntrustedWorkError`); None when the plan has none (written before manifests were)."""
    path = manifest_path(ex, plan)
    if not ex.exists(path):
        return None
    try:
        table = _read_parquet(ex, path)
        meta = json.loads((table.schema.metadata or {})[_MANIFEST_META])
        table = table.select(MANIFEST_SCHEMA.names).cast(MANIFEST_SCHEMA)
    except Exception:  # noqa: BLE001 - whatever it is, it commits nothing
        raise UntrustedWorkError(f"its plan's manifest ({ex.relative(path)}) is unreadable") from None
    if not isinstance(meta, dict):
        raise UntrustedWorkError(f"its plan's manifest ({ex.relative(path)}) is unreadable")
    problem = signed_problem(meta, {"rows": table_digest(table, MANIFEST_COLUMNS)}, secret, manifest_key)
    if problem is not None:
        raise UntrustedWorkError(f"its plan's manifest: {problem}")
    shards: dict[int, dict[str, tuple[str, Asked]]] = {}
    for r in table.to_pylist():
        shards.setdefault(r["shard"], {})[r["pair_id"]] = (r["texts"], _asked(r["wanted"]))
    return PlanManifest(meta, shards)


def _manifest_check(ex: Exchange, table: pa.Table, meta: dict[str, Any], secret: str | None) -> None:
    """Refuse a work file that is not exactly its shard of its plan's manifest: with the key, a manifest signed
    under it is required (without one, a manifest there is still checked)."""
    plan = str(meta["plan_id"])
    manifest = read_manifest(ex, plan, secret)
    if manifest is None:
        if secret is not None:
            raise UntrustedWorkError(f"plan {plan[:40]} has no manifest committed by the orchestrator "
                                     f"({ex.relative(manifest_path(ex, plan))})")
        return
    rows = list(zip(table.column("pair_id").to_pylist(), pair_digests(table),
                    (_asked(w) for w in table.column("wanted").to_pylist())))
    index = int(str(meta["shard"]).split("/")[0])
    problem = manifest_problem(manifest.meta, manifest.shards.get(index, {}), meta, rows)
    if problem is not None:
        raise UntrustedWorkError(problem)


def verify_work(ex: Exchange, path: str, secret: str | None) -> tuple[pa.Table, dict[str, Any]]:
    """A work file's table and metadata, once it is where its metadata says and its digests (and, as this side
    holds the key `secret` or not, its signature or its lack of one) hold; else `UntrustedWorkError`."""
    if not ex.exists(path):
        raise NotFoundError(f"no shard work at {ex.url_of(path)}: is this worker pointed at the orchestrator's "
                            "exchange (the same URL, and credentials that can read it)?")
    table = _read_parquet(ex, path)
    try:
        meta = json.loads((table.schema.metadata or {})[_WORK_META])
    except (KeyError, ValueError):
        meta = None
    if not isinstance(meta, dict):
        raise InvalidInputError(f"{ex.url_of(path)} is not a shard work file (no curator.shard_work metadata)")
    shard = re.fullmatch(r"(\d+)/(\d+)", str(meta.get("shard")))
    if not shard or path != work_path(ex, str(meta.get("plan_id")), int(shard.group(1)), int(shard.group(2))):
        raise UntrustedWorkError(f"it names plan {str(meta.get('plan_id'))[:40]} shard {str(meta.get('shard'))[:20]} "
                                 "but lies elsewhere")
    has_wanted = "wanted" in table.column_names  # a work file written before rounds could be sharded has none
    if not has_wanted:
        table = table.append_column("wanted", pa.nulls(table.num_rows, WANTED_TYPE))
    try:
        table = table.select(WORK_SCHEMA.names).cast(WORK_SCHEMA)
    except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise UntrustedWorkError(CHANGED) from None  # its columns are not the ones the orchestrator writes
    problem = work_problem(meta, table_digest(table, TEXT_COLUMNS), table_digest(table, STATE_COLUMNS), secret,
                           table_digest(table, WANTED_COLUMNS) if has_wanted else None)
    if problem is not None:
        raise UntrustedWorkError(problem)
    _manifest_check(ex, table, meta, secret)
    return table, meta


def shard_plan(ex: Exchange, plan: str, label: str, secret: str | None = None) -> ShardPlan | None:
    """What the orchestrator planned for one shard, or None when there is no such plan. With `secret` (a keyed
    merge) from the plan's manifest alone, which must be signed under it and unchanged (else
    `UntrustedWorkError`): its shard's pairs, and the key of the texts it holds for them, which its results must
    be signed with. Without, from the shard's work file: its pair ids are all the rows are checked against."""
    match = re.fullmatch(r"shard-(\d+)-of-(\d+)", label)
    if match is None:
        return None
    index, count = int(match.group(1)), int(match.group(2))
    if secret is not None:
        manifest = read_manifest(ex, plan, secret)
        if manifest is None:
            if not ex.exists(work_path(ex, plan, index, count)):
                return None
            raise UntrustedWorkError(f"plan {plan[:40]} has no manifest committed by the orchestrator")
        meta, held = manifest.meta, (manifest.meta.get("files") or {}).get(str(index))
        if meta.get("shards") != count or held is None:
            return None
        pair_ids, key = frozenset(manifest.shards.get(index, {})), results_key(secret, plan, held["texts"])
    else:
        path = work_path(ex, plan, index, count)
        if not ex.exists(path):
            return None
        data = pq.read_table(io.BytesIO(ex.get(path)), columns=["pair_id"])
        meta = json.loads(data.schema.metadata[_WORK_META])
        pair_ids, key = frozenset(data.column("pair_id").to_pylist()), None
    slots = parse_strategy(meta["strategy"]).all_slots()
    return ShardPlan(plan, JudgeConfig(**meta["config"]).id, frozenset(slots), pair_ids, key)


@dataclass(frozen=True)
class ShardWork:
    """One shard's work as a worker reads it."""

    plan_id: str
    shard: str  # "i/n"
    config: dict[str, Any]  # the JudgeConfig fields the orchestrator chose
    strategy: str
    pairs: list[PairText]
    states: States
    results_key: bytes | None = None  # what this worker signs its results with (keyed exchanges)
    wanted: dict[str, tuple[Slot, ...]] | None = None  # a round's: exactly the judgments asked of each pair

    @property
    def label(self) -> str:
        index, count = self.shard.split("/")
        return shard_label(int(index), int(count))


def work_path(ex: Exchange, plan: str, index: int, count: int) -> str:
    return ex.path("plans", plan, f"{shard_label(index, count)}.parquet")


def results_dir(ex: Exchange, plan: str, label: str) -> str:
    return ex.path("results", plan, label)


def write_plan(ex: Exchange, plan: str, count: int, shards: dict[int, tuple[list[PairText], States, Wanted | None]],
               *, config: dict[str, Any], strategy: str, secret: str | None = None) -> dict[int, str]:
    """A plan's work files, one per shard given (`shards`: index -> its pairs, their states and the judgments a
    round asks of each), then its manifest, which commits what was planned: every pair id with the digest of its
    texts, the judgments asked of it and its shard, and each shard's digests; signed, when `secret` is given,
    under a key derived from it for manifests alone. Returns the work files' paths by shard."""
    paths: dict[int, str] = {}
    files: dict[str, dict[str, Any]] = {}
    rows: dict[str, list[Any]] = {name: [] for name in MANIFEST_COLUMNS}
    for index, (pairs, states, wanted) in sorted(shards.items()):
        paths[index] = work_path(ex, plan, index, count)
        table, meta = write_work(ex, paths[index], plan=plan, shard=f"{index}/{count}", config=config,
                                 strategy=strategy, pairs=pairs, states=states, secret=secret, wanted=wanted)
        files[str(index)] = {k: meta.get(k) for k in ("texts", "states", "wanted")}
        rows["pair_id"] += table.column("pair_id").to_pylist()
        rows["shard"] += [index] * table.num_rows
        rows["texts"] += pair_digests(table)
        rows["wanted"] += (table.column("wanted").to_pylist() if "wanted" in table.column_names
                           else [None] * table.num_rows)
    manifest = pa.table(rows, schema=MANIFEST_SCHEMA)
    meta = json.loads(json.dumps({"plan_id": plan, "config": config, "strategy": strategy, "shards": count,
                                  "files": files, "rows": table_digest(manifest, MANIFEST_COLUMNS),
                                  "signed": secret is not None}))
    if secret is not None:
        meta["signature"] = record_signature(manifest_key(secret), meta)
    ex.put(manifest_path(ex, plan),
           _parquet_bytes(manifest.replace_schema_metadata({_MANIFEST_META: json.dumps(meta).encode()}),
                          compression="zstd"))
    return paths


def write_work(ex: Exchange, path: str, *, plan: str, shard: str, config: dict[str, Any], strategy: str,
               pairs: list[PairText], states: States, secret: str | None = None, wanted: Wanted | None = None,
               ) -> tuple[pa.Table, dict[str, Any]]:
    """One shard's work file, with the digests of its texts, states and the judgments a round asks (`wanted`,
    per pair; None: the strategy's own); signed when `secret` (the exchange's key) is given, and saying whether
    it is, so that a worker keyed otherwise refuses it. Returns its table and metadata as written. (A plan's
    files are written by `write_plan`, which commits its manifest too.)"""
    by_pair: dict[str, list[dict[str, Any]]] = {}
    for (pid, order, sample), state in states.items():
        by_pair.setdefault(pid, []).append({"order": order, "sample_index": sample, **state._asdict()})
    table = pa.table({
        "pair_id": [p.pair_id for p in pairs], "history": [json.dumps(p.history, ensure_ascii=False) for p in pairs],
        "response_a": [p.response_a for p in pairs], "response_b": [p.response_b for p in pairs],
        "states": [by_pair.get(p.pair_id, []) for p in pairs],
        "wanted": [[] if wanted is None else [{"order": o, "sample_index": s} for o, s in wanted[p.pair_id]]
                   for p in pairs],
    }, schema=WORK_SCHEMA)
    meta = {"plan_id": plan, "shard": shard, "config": config, "strategy": strategy,
            "texts": table_digest(table, TEXT_COLUMNS), "states": table_digest(table, STATE_COLUMNS),
            "wanted": table_digest(table, WANTED_COLUMNS), "signed": secret is not None}
    if wanted is None:  # the strategy's own judgments: the file as it was before rounds could be sharded
        table = table.drop_columns(list(WANTED_COLUMNS))
        del meta["wanted"]
    meta = json.loads(json.dumps(meta))  # signed as it is read back
    if secret is not None:
        meta["signature"] = record_signature(plan_key(secret, plan), meta)
    table = table.replace_schema_metadata({_WORK_META: json.dumps(meta).encode()})
    ex.put(path, _parquet_bytes(table, compression="zstd"))
    return table, meta


def read_work(ex: Exchange, path: str, secret: str | None = None) -> ShardWork:
    """A shard's work, refused (`UntrustedWorkError`) unless it is unchanged and signed exactly when this worker
    holds the exchange's key (`secret`)."""
    table, meta = verify_work(ex, path, secret)
    rows = table.to_pylist()
    pairs = [PairText(r["pair_id"], json.loads(r["history"]), r["response_a"], r["response_b"]) for r in rows]
    states: States = {}
    for r in rows:
        for s in r["states"]:
            states[(r["pair_id"], s["order"], s["sample_index"])] = _state(s)
    key = results_key(secret, meta["plan_id"], meta["texts"]) if secret is not None else None
    asked = {r["pair_id"]: tuple((w["order"], w["sample_index"]) for w in r["wanted"]) for r in rows
             if r["wanted"] is not None}
    if asked and len(asked) != len(rows):
        raise UntrustedWorkError("it names the judgments a round asks of some of its pairs only")
    return ShardWork(meta["plan_id"], meta["shard"], meta["config"], meta["strategy"], pairs, states, key,
                     asked or None)


def _state(row: dict[str, Any]) -> JudgmentState:
    """A state from a work or result file's row (files written before `requests` existed lack it)."""
    return JudgmentState(row["status"], row["attempts"], row.get("margin_a"), row.get("score_a"), row.get("score_b"),
                         row.get("requests") or 0, row.get("failure_reason"))


def fold_results(states: States, ex: Exchange, folder: str, signed_with: bytes | None = None) -> int:
    """Overlay the judgments already written in `folder` (by an earlier attempt at this shard) onto
    `states`, as the warehouse would merge them: an 'ok' is final, else the most attempts. Returns files read;
    one that cannot be read, or is not signed with `signed_with` (the shard's results key, if keyed), is left
    to the merge (which moves it aside): its judgments are asked again."""
    files = ex.glob(f"{folder}/*.parquet")
    for f in files:
        try:
            data = ex.get(f)
            if signed_with is not None and not signature_holds(signed_with, data,
                                                               ResultFile(ex.relative(f), f).parts[3]):
                _log.warning("result file %s carries no valid signature; its judgments are asked again", ex.url_of(f))
                continue
            table = pq.read_table(io.BytesIO(data))
        except Exception as err:  # noqa: BLE001 - a damaged file must not stop the shard
            _log.warning("result file %s is unreadable (%s: %s); its judgments are asked again", ex.url_of(f),
                         type(err).__name__, str(err)[:200])
            continue
        for r in table.select([c for c in ("pair_id", "order", "sample_index", *_STATE_FIELDS)
                               if c in table.column_names]).to_pylist():
            key = (r["pair_id"], r["order"], r["sample_index"])
            old = states.get(key)
            if old is not None and (old.status == "ok" or (r["status"] != "ok" and r["attempts"] < old.attempts)):
                continue
            states[key] = _state(r)
    return len(files)


class ResultWriter:
    """Writes a worker's judgment batches as numbered Parquet files in its shard's results folder, signed in
    their names when the worker holds the exchange key (`key`: the shard's, from `results_key`)."""

    def __init__(self, ex: Exchange, folder: str, run_id: str, key: bytes | None = None):
        self.ex = ex
        self.folder = folder
        self.run_id = run_id
        self.key = key
        self.seq = 0
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self.seq += 1
        data = _parquet_bytes(table.cast(JUDGMENT_SCHEMA))
        signed = f".{signature(self.key, data)}" if self.key else ""
        self.ex.put(f"{self.folder}/{self.run_id}-{self.seq:05d}{signed}.parquet", data)
        self.rows += table.num_rows

    def record(self, data: dict[str, Any]) -> None:
        """The run's record (started, then finished), merged into judge_runs with its judgments."""
        data = json.loads(json.dumps(data, default=str))  # as it will be read back
        if self.key:
            data["signature"] = record_signature(self.key, data)
        self.ex.put(f"{self.folder}/{self.run_id}.run.json", json.dumps(data, indent=1).encode())

    @contextmanager
    def recorded_run(self, record: dict[str, Any]) -> Iterator[RunOutcome]:
        """The worker's run recorded around the block as the warehouse records a run (`recorded_run`): started
        now, then completed with the summary the block leaves in the outcome, or failed with the error, which
        is raised on. `record` holds the run's fields; what the block adds to it is in the later records."""
        record.update(started_at=_now(), status="running")
        self.record(record)
        outcome = RunOutcome()
        try:
            yield outcome
        except BaseException as err:
            self.record({**record, "status": "failed", "finished_at": _now(), "error": f"{type(err).__name__}: {err}"})
            raise
        self.record({**record, "status": "completed", "finished_at": _now(), "summary": outcome.summary})


class Heartbeat:
    """Rewrites `<run_id>.heartbeat` every `every` seconds while a worker judges, with a counter that only
    grows, so the orchestrator can tell a slow shard from a dead worker without comparing clocks."""

    def __init__(self, ex: Exchange, folder: str, run_id: str, every: float = 5.0):
        self.ex = ex
        self.path = f"{folder}/{run_id}.heartbeat"
        self.every = every
        self.beats = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="judge-heartbeat")

    def _write(self) -> None:
        self.beats += 1
        self.ex.put(self.path, json.dumps({"beat": self.beats, "worker_time": time.time()}).encode())

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self._write()
            except Exception:  # noqa: BLE001 - a missed beat (storage briefly unreachable) is retried next time
                pass

    def __enter__(self) -> Heartbeat:
        self._write()  # alive from the moment the context is entered
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class HeartbeatWatch:
    """When, on the orchestrator's clock, each shard folder's heartbeats last changed."""

    ex: Exchange
    seen: dict[str, tuple[bytes, float]] = field(default_factory=dict)  # heartbeat path -> (content, first seen)

    def last_change(self, folder: str, now: float | None = None) -> float | None:
        """The latest time any heartbeat in `folder` was seen with new content (None: no heartbeat yet)."""
        now = time.time() if now is None else now
        latest = None
        for path in self.ex.glob(f"{folder}/*.heartbeat"):
            try:
                content = self.ex.get(path)
            except FileNotFoundError:
                continue
            before = self.seen.get(path)
            if before is None or before[0] != content:
                self.seen[path] = (content, now)
            changed = self.seen[path][1]
            latest = changed if latest is None else max(latest, changed)
        return latest


_RESULT_NAME = re.compile(r"(?P<run>.+)-(?P<seq>\d{5})(?:\.(?P<sig>[0-9a-f]+))?\.parquet")


@dataclass(frozen=True)
class ResultFile:
    key: str  # path relative to the exchange root: the merge's identity for this file
    path: str

    @property
    def parts(self) -> tuple[str, str, str | None, str | None]:
        """(plan id, shard label, the worker run that wrote it, its signature): None where the name says none."""
        _, plan, label, name = self.key.split("/")
        match = _RESULT_NAME.fullmatch(name)
        return plan, label, match.group("run") if match else None, match.group("sig") if match else None


def result_files(ex: Exchange) -> list[ResultFile]:
    """Every judgment batch in the exchange, oldest name first within a shard."""
    return [ResultFile(ex.relative(p), p) for p in ex.glob(ex.path("results", "*", "*", "*.parquet"))]


def file_digest(data: bytes) -> str:
    """The digest a merged file is remembered by."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_result(ex: Exchange, f: ResultFile) -> tuple[pa.Table, str]:
    """A result file's judgments and the digest of its bytes (read once)."""
    data = ex.get(f.path)
    return pq.read_table(io.BytesIO(data)), file_digest(data)


def run_record_files(ex: Exchange) -> list[str]:
    return ex.glob(ex.path("results", "*", "*", "*.run.json"))
