"""Checking what workers wrote to the judge exchange before a row of it is merged: pure functions.

The exchange is storage that other hosts write to, so nothing read from it is trusted. Each judgment row must
answer the shard's plan (a planned pair, the plan's judge configuration, an order and sample the strategy can
ask for, the run named in the file) and hold a coherent verdict (scores 1-5, ranking 1-6, the A-side fields
equal to the verdict mapped from its order) or a failure with a reason and no verdict. A row that fails is
rejected with the first reason it fails, never merged; the others of its file are.

Files can also be authenticated: with a key shared by the orchestrator and the GPU workers
(`CURATE_JUDGE_EXCHANGE_KEY`), each worker signs its result files (an HMAC-SHA256 of the bytes, under a key
derived for the plan) in their names, and its run records inside them; the merge then refuses any file
without a valid signature, so whoever can write to the storage but lacks the key cannot add a verdict.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from common.reasons import ExchangeReject
from tasks.judge.genrm import ORDERS, Verdict, to_a_side

KEY_ENV = "CURATE_JUDGE_EXCHANGE_KEY"
SIGNATURE_CHARS = 32  # hex characters of the HMAC kept in a file name (128 bits)
_VERDICT_FIELDS = ("score_1", "score_2", "ranking", "score_a", "score_b", "ranking_a", "margin_a")
RUN_RECORD_FIELDS = {"run_id": str, "judge_config_id": str, "strategy": str, "endpoints": list, "shard": str,
                     "started_at": str, "status": str}
RUN_STATUSES = ("running", "completed", "failed")


@dataclass(frozen=True)
class ShardPlan:
    """What one shard was asked to judge, as the orchestrator planned it."""

    plan_id: str
    config_id: str
    slots: frozenset[tuple[str, int]]  # every (order, sample) the plan's strategy may ask for
    pair_ids: frozenset[str]


def plan_key(secret: str, plan_id: str) -> bytes:
    """The signing key of one plan, derived from the shared secret: a key leaked with one plan's files
    signs nothing for another plan."""
    return hmac.new(secret.encode(), f"curator-exchange-plan\0{plan_id}".encode(), hashlib.sha256).digest()


def signature(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()[:SIGNATURE_CHARS]


def signature_holds(key: bytes, data: bytes, claimed: str | None) -> bool:
    return claimed is not None and hmac.compare_digest(signature(key, data), claimed)


def record_signature(key: bytes, record: dict[str, Any]) -> str:
    """A run record's signature: over its canonical JSON, without the signature field itself."""
    body = {k: v for k, v in record.items() if k != "signature"}
    return signature(key, json.dumps(body, sort_keys=True, default=str).encode())


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


def run_record_problem(record: Any) -> str | None:
    """Why a worker's run record cannot be merged, or None."""
    if not isinstance(record, dict):
        return "not an object"
    for name, kind in RUN_RECORD_FIELDS.items():
        if not isinstance(record.get(name), kind):
            return f"{name} missing or not a {kind.__name__}"
    if record["status"] not in RUN_STATUSES:
        return f"status {record['status']!r:.40} is not one of {RUN_STATUSES}"
    if record.get("summary") is not None and not isinstance(record["summary"], dict):
        return "summary is not an object"
    return None
