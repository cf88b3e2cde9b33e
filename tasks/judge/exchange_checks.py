"""Checking what workers wrote to the judge exchange before a row of it is merged: pure functions.

The exchange is storage that other hosts write to, so nothing read from it is trusted. Each judgment row must
answer the shard's plan (a planned pair, the plan's judge configuration, an order and sample the strategy can
ask for, the run named in the file) and hold a coherent verdict (scores 1-5, ranking 1-6, the A-side fields
equal to the verdict mapped from its order) or a failure with a reason and no verdict. A row that fails is
rejected with the first reason it fails, never merged; the others of its file are.

Files can also be authenticated: with a key shared by the orchestrator and the GPU workers
(`CURATE_JUDGE_EXCHANGE_KEY`), the orchestrator commits each plan's manifest (every pair id with the digest of
its texts, answer order included, the judgments asked of it and its shard; each shard's digests) under a key
derived from the secret for manifests alone, and signs each work file (an HMAC-SHA256, under a key derived for
the plan, over its metadata and the digests of its texts and states). A worker judges no work file whose
signature does not hold, nor an unsigned one, nor one that is not exactly its shard of the plan's manifest; a
keyless worker judges no signed one. Each worker signs its result files (an HMAC of the bytes) in their names,
and its run records inside them, under a key derived from the secret for the plan AND the digest of the texts
it judged: neither a plan's key nor another shard's results key can make it. The merge checks each file
against the manifest (its shard's pairs, and the key of the texts the manifest holds), so whoever can write to
the storage, or holds one plan's key, cannot add a verdict for any pair or text the orchestrator did not plan.

A worker's run record is typed field by field (its summary against `JudgeSummary`), must lie where its worker
writes it (`<run_id>.run.json` in its own shard's folder) and must agree with what the warehouse holds of
that run: so one run counts once, however often its record is copied.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import types
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NewType, TypedDict, Union, get_args, get_origin, get_type_hints, is_typeddict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.reasons import ExchangeReject
from schemas.summaries import JudgeSummary
from tasks.judge.genrm import ORDERS, Verdict, to_a_side
from warehouse.judging import PairText

KEY_ENV = "CURATE_JUDGE_EXCHANGE_KEY"
SIGNATURE_CHARS = 32  # hex characters of the HMAC kept in a file name (128 bits)
_VERDICT_FIELDS = ("score_1", "score_2", "ranking", "score_a", "score_b", "ranking_a", "margin_a")
RUN_STATUSES = ("running", "completed", "failed")
TEXT_COLUMNS = PairText._fields  # what a judge reads, in the order it reads it
STATE_COLUMNS = ("states",)
WANTED_COLUMNS = ("wanted",)  # the judgments a round asks of each pair (sharded rounds)

Timestamp = NewType("Timestamp", str)  # a time as `str(datetime)` writes it


class _RunRecordStart(TypedDict):
    run_id: str
    judge_config_id: str
    strategy: str
    endpoints: list[str]
    shard: str
    started_at: Timestamp
    status: str


class WorkerRunRecord(_RunRecordStart, total=False):
    """A worker's run record (`<run_id>.run.json`), field by field (the fields above always); nothing else may
    be in it."""

    template: str | None
    finished_at: Timestamp
    error: str
    summary: JudgeSummary | None
    signature: str


@dataclass(frozen=True)
class ShardPlan:
    """What one shard was asked to judge, as the orchestrator planned it."""

    plan_id: str
    config_id: str
    slots: frozenset[tuple[str, int]]  # every (order, sample) the plan's strategy may ask for
    pair_ids: frozenset[str]
    results_key: bytes | None = None  # what its results are signed with (`results_key`), when the exchange is keyed


def plan_key(secret: str, plan_id: str) -> bytes:
    """The key of one plan's work files, derived from the shared secret. It signs work files only, and a work file
    is judged only as the plan's manifest (`manifest_key`) says: so it signs nothing a worker or the merge takes
    outside its own plan, and no result at all."""
    return hmac.new(secret.encode(), f"curator-exchange-plan\0{plan_id}".encode(), hashlib.sha256).digest()


def manifest_key(secret: str) -> bytes:
    """The key the orchestrator commits plans' manifests with: derived from the shared secret for that alone (no
    plan's key or results key leads to it)."""
    return hmac.new(secret.encode(), b"curator-exchange-manifest", hashlib.sha256).digest()


def results_key(secret: str, plan_id: str, texts: str) -> bytes:
    """The key a worker signs its results and run record with: derived from the shared secret for one plan and
    the digest of the texts it judged (`texts` of the work file, as the plan's manifest holds them), so results
    of other texts or another plan never verify, and a plan's key cannot make it."""
    return hmac.new(secret.encode(), f"curator-exchange-results\0{plan_id}\0{texts}".encode(),
                    hashlib.sha256).digest()


def signature(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()[:SIGNATURE_CHARS]


def signature_holds(key: bytes, data: bytes, claimed: str | None) -> bool:
    return claimed is not None and hmac.compare_digest(signature(key, data), claimed)


def record_signature(key: bytes, record: dict[str, Any]) -> str:
    """A run record's signature, or a work file's (over its metadata, digests included): over its canonical JSON,
    without the signature field itself."""
    body = {k: v for k, v in record.items() if k != "signature"}
    return signature(key, json.dumps(body, sort_keys=True, default=str).encode())


def _feed(h: Any, arr: pa.Array) -> None:
    """An Arrow array's values into a hash, exactly: its length, which values are null, and each value's bytes
    (strings length-prefixed), whatever the array's chunking or encoding on disk."""
    h.update(len(arr).to_bytes(8, "little"))
    h.update(arr.is_null().to_numpy(zero_copy_only=False).astype(np.uint8).tobytes())
    kind = arr.type
    if pa.types.is_struct(kind):
        for child in arr.flatten():
            _feed(h, child)
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        h.update(pc.list_value_length(arr).fill_null(0).cast(pa.int64()).to_numpy().tobytes())
        _feed(h, arr.flatten())
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        arr = arr.cast(pa.large_string()).fill_null("")
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
        h.update(np.diff(offsets).tobytes())
        data = arr.buffers()[2]
        if data is not None and len(arr):
            h.update(memoryview(data)[offsets[0]:offsets[-1]])
    else:
        h.update(arr.fill_null(0).to_numpy(zero_copy_only=False).tobytes())


def table_digest(table: pa.Table, columns: tuple[str, ...]) -> str:
    """A digest of `columns` of a table, in order, value by value (answer order included: a pair id, which
    ignores it, would not tell a swapped pair)."""
    h = hashlib.blake2b(digest_size=16)
    for name in columns:
        column = table.column(name)
        if pa.types.is_string(column.type):
            column = column.cast(pa.large_string())  # a shard's texts may pass 2 GiB
        h.update(name.encode() + b"\0")
        _feed(h, column.combine_chunks())
    return h.hexdigest()


CHANGED = "its content does not match the digests it was written with: it was changed after it was written"
KEY_ON_ORCHESTRATOR_ONLY = (f"it is signed (the orchestrator holds {KEY_ENV}) and this side holds no key: a key "
                            "on one side only")
KEY_ON_WORKER_ONLY = (f"it is not signed (the orchestrator holds no key) and this side holds {KEY_ENV}: a key on "
                      "one side only")
BAD_SIGNATURE = (f"its signature does not hold under this side's {KEY_ENV}: it was changed after it was signed, or "
                 "the keys differ")


def signed_problem(meta: dict[str, Any], digests: dict[str, str | None], secret: str | None,
                   key: Any) -> str | None:
    """Why a file written with `meta` (its digests, whether it is signed, its signature) must not be trusted, given
    the `digests` its content has now and this side's secret (`key(secret)` the key it is signed with); None: it
    may. A file written before it carried digests is only checked for its signature."""
    signed = meta.get("signed") is True
    if (signed or any(name in meta for name in digests)) and {name: meta.get(name) for name in digests} != digests:
        return CHANGED
    if signed and secret is None:
        return KEY_ON_ORCHESTRATOR_ONLY
    if not signed and secret is not None:
        return KEY_ON_WORKER_ONLY
    claimed = meta.get("signature")
    if signed and not (isinstance(claimed, str) and hmac.compare_digest(record_signature(key(secret), meta), claimed)):
        return BAD_SIGNATURE
    return None


def work_problem(meta: dict[str, Any], texts: str, states: str, secret: str | None,
                 wanted: str | None = None) -> str | None:
    """Why a work file must not be judged (or trusted by a keyed merge), given the digests of the texts, states
    and asked judgments (`wanted`; None: the file has no such column, as before rounds could be sharded) it
    holds and this side's secret; None: it may."""
    return signed_problem(meta, {"texts": texts, "states": states, "wanted": wanted}, secret,
                          lambda s: plan_key(s, str(meta.get("plan_id"))))


MANIFEST_COLUMNS = ("pair_id", "shard", "texts", "wanted")  # a plan's manifest: one row a pair


def pair_digests(table: pa.Table) -> list[str]:
    """The digest of each pair's texts (`TEXT_COLUMNS` of a work file's rows, answer order included), as a plan's
    manifest holds them."""
    out = []
    for values in zip(*(table.column(name).to_pylist() for name in TEXT_COLUMNS)):
        h = hashlib.blake2b(digest_size=16)
        for value in values:
            data = value.encode() if isinstance(value, str) else b""
            h.update(b"\0" if value is None else b"\1" + len(data).to_bytes(8, "little") + data)
        out.append(h.hexdigest())
    return out


Asked = tuple[tuple[str, int], ...] | None  # the judgments a round asks of a pair (None: the strategy's own)


def manifest_problem(manifest: dict[str, Any], planned: dict[str, tuple[str, Asked]], meta: dict[str, Any],
                     rows: list[tuple[str, str, Asked]]) -> str | None:
    """Why a work file (`meta`, and its `rows`: each pair id, the digest of its texts and the judgments it asks) is
    not its shard of the plan as its manifest commits it (`manifest`'s metadata, and `planned`: the shard's pair
    ids with their digests and judgments); None: it is, pair for pair."""
    plan, shard = str(meta.get("plan_id"))[:40], str(meta.get("shard"))[:20]
    if manifest.get("plan_id") != meta.get("plan_id"):
        return f"the manifest beside it is not plan {plan}'s"
    if (manifest.get("config"), manifest.get("strategy")) != (meta.get("config"), meta.get("strategy")):
        return f"its judge configuration or strategy is not the one plan {plan}'s manifest names"
    seen: set[str] = set()
    for pair, digest, asked in rows:
        if pair not in planned or pair in seen:
            return f"pair {str(pair)[:40]} is not in plan {plan}'s manifest for shard {shard}"
        seen.add(pair)
        if planned[pair][0] != digest:
            return f"the texts of pair {pair[:40]} are not those plan {plan}'s manifest holds (answers swapped or changed)"
        if planned[pair][1] != asked:
            return f"the judgments it asks of pair {pair[:40]} are not those plan {plan}'s manifest names"
    missing = sorted(planned.keys() - seen)
    if missing:
        return f"it lacks pair {missing[0][:40]} of plan {plan}'s manifest for shard {shard}"
    index, _, count = shard.partition("/")
    held = (manifest.get("files") or {}).get(index)
    if manifest.get("shards") != int(count) or held != {k: meta.get(k) for k in ("texts", "states", "wanted")}:
        return f"its digests (texts, cached states) are not those plan {plan}'s manifest holds for shard {shard}"
    return None


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def row_problem(row: dict[str, Any], plan: ShardPlan, run_id: str) -> str | None:
    """Why a judgment row from the exchange cannot be merged under `plan`, or None when it can."""
    if row.get("pair_id") not in plan.pair_ids:
        return ExchangeReject.NOT_PLANNED
    if row.get("judge_config_id") != plan.config_id:
        return ExchangeReject.WRONG_CONFIG
    order, sample = row.get("order"), row.get("sample_index")
    if order not in ORDERS or (order, sample) not in plan.slots:
        return ExchangeReject.UNPLANNED_SLOT
    if row.get("judge_run_id") != run_id:
        return ExchangeReject.WRONG_RUN
    if not _int_in(row.get("attempts"), 0, 10_000) or not _int_in(row.get("requests"), 0, 1_000_000):
        return ExchangeReject.BAD_COUNTS
    status = row.get("status")
    if status == "failed":
        if not row.get("failure_reason") or any(row.get(f) is not None for f in _VERDICT_FIELDS):
            return ExchangeReject.BAD_FAILURE
        return None
    if status != "ok":
        return ExchangeReject.BAD_STATUS
    if row.get("failure_reason") is not None:
        return ExchangeReject.BAD_VERDICT
    s1, s2, rank = row.get("score_1"), row.get("score_2"), row.get("ranking")
    if not (_int_in(s1, 1, 5) and _int_in(s2, 1, 5) and _int_in(rank, 1, 6)):
        return ExchangeReject.BAD_VERDICT
    side = to_a_side(Verdict(s1, s2, rank), order)
    margin = row.get("margin_a")
    if (row.get("score_a"), row.get("score_b"), row.get("ranking_a")) != (side.score_a, side.score_b, side.ranking_a) \
            or not isinstance(margin, float) or not math.isclose(margin, side.margin, abs_tol=1e-9):
        return ExchangeReject.BAD_VERDICT
    return None


def split_rows(table: pa.Table, plan: ShardPlan, run_id: str) -> tuple[pa.Table, list[tuple[dict[str, Any], str]]]:
    """(the rows that may be merged, the others each with its reason)."""
    keep: list[int] = []
    rejected: list[tuple[dict[str, Any], str]] = []
    for i, row in enumerate(table.to_pylist()):
        problem = row_problem(row, plan, run_id)
        if problem is None:
            keep.append(i)
        else:
            rejected.append((row, problem))
    return table.take(pa.array(keep, pa.int64())), rejected


_WORDS = {int: "a count", float: "a finite number", str: "a string", bool: "true or false", type(None): "null",
          Timestamp: "a time"}


def _word(hint: Any) -> str:
    return _WORDS.get(hint) or getattr(get_origin(hint), "__name__", None) or getattr(hint, "__name__", str(hint))


def _field(name: str, key: str) -> str:
    return f"{name}.{key}" if name else key


def type_problem(value: Any, hint: Any, name: str = "") -> str | None:
    """Why a value read from JSON is not of type `hint` (None: it is), naming the field: a count is an int >= 0
    (never a bool or a string), a number is finite, a TypedDict holds its required keys and no other."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return None
    if origin in (Union, types.UnionType):
        if any(type_problem(value, a) is None for a in args):
            return None
        others = [a for a in args if a is not type(None)]
        if len(others) == 1:  # an optional field: what is wrong with it as the one type it may be
            return type_problem(value, others[0], name)
        return f"{name} is {json.dumps(value, default=str)[:40]}, not {' or '.join(_word(a) for a in args)}"
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return f"{name or 'the record'} is not an object"
        hints = get_type_hints(hint)
        missing = sorted(hint.__required_keys__ - value.keys())
        if missing:
            return f"{_field(name, missing[0])} missing"
        for key, item in value.items():
            if key not in hints:
                return f"{_field(name, key)[:80]} is not a field of a {hint.__name__}"
            problem = type_problem(item, hints[key], _field(name, key))
            if problem:
                return problem
        return None
    if origin is list:
        if not isinstance(value, list):
            return f"{name} is not a list"
        return next((p for i, v in enumerate(value) if (p := type_problem(v, args[0], f"{name}[{i}]"))), None)
    if origin is dict:
        if not isinstance(value, dict):
            return f"{name} is not an object"
        return next((p for k, v in value.items() if (p := type_problem(v, args[1], _field(name, k)[:80]))), None)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    fits = {int: lambda: number and isinstance(value, int) and value >= 0,
            float: lambda: number and math.isfinite(value),
            str: lambda: isinstance(value, str), bool: lambda: isinstance(value, bool),
            type(None): lambda: value is None, Timestamp: lambda: isinstance(value, str) and _is_time(value)}
    if hint not in fits:
        raise TypeError(f"no check for {hint!r}")  # a field typed with something this checker does not know
    return None if fits[hint]() else f"{name} is {json.dumps(value, default=str)[:40]}, not {_word(hint)}"


def _is_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def run_record_problem(record: Any) -> str | None:
    """Why a worker's run record cannot be merged, or None: every field typed (`WorkerRunRecord`)."""
    problem = type_problem(record, WorkerRunRecord)
    if problem is not None:
        return problem
    if record["status"] not in RUN_STATUSES:
        return f"status {record['status']!r:.40} is not one of {RUN_STATUSES}"
    return None


_SHARD = re.compile(r"(\d+)/(\d+)")


def run_record_place_problem(record: dict[str, Any], label: str, name: str) -> str | None:
    """Why a (typed) run record is not where its worker writes it: `<run_id>.run.json` in the folder of its own
    shard (`label`: the folder's name, `name`: the file's); None when it is. A copy elsewhere is not counted."""
    if name != f"{record['run_id']}.run.json":
        return f"named {name[:60]!r}, not after its run {record['run_id'][:60]!r}"
    match = _SHARD.fullmatch(record["shard"])
    if match is None or f"shard-{match.group(1)}-of-{match.group(2)}" != label:
        return f"its shard {record['shard'][:20]!r} is not the folder's {label}"
    return None


FINAL_STATUSES = ("completed", "failed")


def run_record_conflict(stored: dict[str, Any] | None, record: dict[str, Any]) -> str | None:
    """Which field of a run record disagrees with the same run as the warehouse holds it (`stored`: its
    judge_config_id, strategy, shard, status and summary; None: not recorded yet), or None. A record may move a
    run forward (running, then completed or failed); once final, another final word on it is a conflict."""
    if stored is None:
        return None
    for key in ("judge_config_id", "strategy", "shard"):
        if stored[key] != record[key]:
            return key
    if stored["status"] in FINAL_STATUSES and record["status"] in FINAL_STATUSES:
        for key in ("status", "summary"):
            if (stored.get(key) or None) != (record.get(key) or None):
                return key
    return None
