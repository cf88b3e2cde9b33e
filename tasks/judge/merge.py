"""Merging the judge exchange into the warehouse, trusting nothing in it.

Each result file not merged yet is read once; a file that cannot be read, names no known plan, carries no
valid signature (when the exchange is keyed: the key of the texts its plan's manifest, signed and unchanged,
holds for its shard) or was rewritten after it was merged is moved aside under `quarantine/` with one warning,
and the merge goes on: no single file can block later merges. A merge without the key says so in one line
before it merges anything: it cannot authenticate what it merges. The rows of a readable file are checked against their shard's plan (`exchange_checks.py`):
the good ones are merged, the others are stored in `exchange_rejects` with their reason, never as verdicts.
Run records likewise: typed field by field, in their own place, agreeing with the run as already recorded;
the warehouse's `judge_runs` then holds each run once, and a flow totals a run from there, never from files.
"""

from __future__ import annotations

import io
import json
import logging
from collections import Counter
from dataclasses import dataclass, field, fields

import pyarrow.parquet as pq

from common.errors import InvalidInputError
from common.reasons import ExchangeFileFault, lookup
from schemas.summaries import MergeSummary
from tasks.judge.exchange import (
    Exchange,
    ResultFile,
    UntrustedWorkError,
    file_digest,
    result_files,
    run_record_files,
    shard_plan,
    shared_secret,
)
from tasks.judge.exchange_checks import (
    FINAL_STATUSES,
    KEY_ENV,
    ShardPlan,
    record_signature,
    run_record_conflict,
    run_record_place_problem,
    run_record_problem,
    signature_holds,
    split_rows,
)
from tasks.judge.run import JUDGMENT_SCHEMA
from tasks.judge.strategies import parse_strategy
from warehouse.store import Warehouse

_log = logging.getLogger(__name__)


@dataclass
class MergeReport:
    files: int = 0  # result files merged by this call
    rows: int = 0  # judgment rows merged
    run_records: int = 0
    rejected_rows: Counter = field(default_factory=Counter)  # reason -> rows not merged
    quarantined: list[dict[str, str]] = field(default_factory=list)  # files moved aside: file, reason
    authenticated: bool = False  # result files and run records had to carry the plan's signature

    def as_dict(self) -> MergeSummary:
        """Every field as it reads in JSON (a tally most common first)."""
        return {f.name: dict(v.most_common()) if isinstance(v := getattr(self, f.name), Counter) else v
                for f in fields(self)}


class _Merge:
    def __init__(self, wh: Warehouse, ex: Exchange, secret: str | None):
        self.wh, self.ex, self.secret = wh, ex, secret
        self.report = MergeReport(authenticated=secret is not None)
        self._plans: dict[tuple[str, str], ShardPlan | str] = {}

    def quarantine(self, path: str, reason: str) -> None:
        key = self.ex.relative(path)
        moved = self.ex.move_aside(path, reason)
        self.wh.judging.record_quarantined_file(key, self.ex.relative(moved), reason)
        self.report.quarantined.append({"file": key, "reason": reason})
        _log.warning("judge exchange: %s moved aside to %s: %s", key, self.ex.relative(moved), reason)

    def plan(self, plan_id: str, label: str) -> ShardPlan | str:
        """The shard's plan, or why none can check its files (a reason to quarantine them with)."""
        if (plan_id, label) not in self._plans:
            try:
                found = shard_plan(self.ex, plan_id, label, self.secret)
            except UntrustedWorkError as err:
                found = ExchangeFileFault.PLAN_UNTRUSTED.of(plan_id, label, err.problem)
            except Exception:  # noqa: BLE001 - an unreadable plan validates nothing
                found = None
            self._plans[(plan_id, label)] = ExchangeFileFault.NO_PLAN.of(plan_id, label) if found is None else found
        return self._plans[(plan_id, label)]

    def signed(self, plan: ShardPlan, data: bytes, claimed: str | None) -> bool:
        return self.secret is None or (plan.results_key is not None
                                       and signature_holds(plan.results_key, data, claimed))

    def result_file(self, f: ResultFile) -> None:
        plan_id, label, run_id, claimed = f.parts
        try:
            data = self.ex.get(f.path)
        except FileNotFoundError:
            return  # moved or removed since it was listed
        if run_id is None:
            return self.quarantine(f.path, ExchangeFileFault.BAD_NAME.of("<run_id>-<seq>[.<signature>].parquet"))
        plan = self.plan(plan_id, label)
        if isinstance(plan, str):
            return self.quarantine(f.path, plan)
        if not self.signed(plan, data, claimed):
            return self.quarantine(f.path, ExchangeFileFault.UNSIGNED.of(KEY_ENV))
        try:
            table = pq.read_table(io.BytesIO(data))
            table = table.select(JUDGMENT_SCHEMA.names).cast(JUDGMENT_SCHEMA)
        except Exception as err:  # noqa: BLE001 - truncated, corrupt, or not judgments at all
            return self.quarantine(f.path, ExchangeFileFault.UNREADABLE.of(type(err).__name__, str(err)[:200]))
        good, rejected = split_rows(table, plan, run_id)
        digest = file_digest(data)
        outcome = self.wh.judging.merge_result_file(f.key, digest, good, rejected)
        if outcome == "rewritten":
            return self.quarantine(f.path, ExchangeFileFault.REWRITTEN.of("files are written once"))
        if outcome == "merged":
            self.report.files += 1
            self.report.rows += good.num_rows
            self.report.rejected_rows.update(reason for _, reason in rejected)
            if rejected:
                _log.warning("judge exchange: %d rows of %s rejected (%s)", len(rejected), f.key,
                             ", ".join(f"{r}: {n}" for r, n in Counter(r for _, r in rejected).most_common()))

    def run_record(self, path: str) -> None:
        try:
            record = json.loads(self.ex.get(path))
        except FileNotFoundError:
            return
        except ValueError as err:
            return self.quarantine(path, ExchangeFileFault.RUN_RECORD_NOT_JSON.of(str(err)[:120]))
        problem = run_record_problem(record)
        if problem is not None:
            return self.quarantine(path, ExchangeFileFault.RUN_RECORD_INVALID.of(problem))
        _, plan_id, label, name = self.ex.relative(path).split("/")
        misplaced = run_record_place_problem(record, label, name)
        if misplaced is not None:
            return self.quarantine(path, ExchangeFileFault.RUN_RECORD_MISPLACED.of(misplaced))
        stored = self.wh.runs.judge_run(record["run_id"])
        if stored is not None and stored["status"] in FINAL_STATUSES and run_record_conflict(stored, record) is None \
                and record["status"] in FINAL_STATUSES:
            self.report.run_records += 1  # recorded as it says already (before a key was set, say): changes nothing
            return None
        if self.secret is not None:
            plan = self.plan(plan_id, label)
            if isinstance(plan, str):
                return self.quarantine(path, plan)
            if plan.results_key is None or record.get("signature") != record_signature(plan.results_key, record):
                return self.quarantine(path, ExchangeFileFault.RUN_RECORD_UNSIGNED.of(KEY_ENV))
        try:  # the record names its strategy; what that strategy declares is recorded beside it
            on_purpose = parse_strategy(record["strategy"]).one_order_on_purpose
        except InvalidInputError as err:
            return self.quarantine(path, ExchangeFileFault.RUN_RECORD_INVALID.of(err))
        conflict = run_record_conflict(stored, record)
        if conflict is not None:
            return self.quarantine(path, ExchangeFileFault.RUN_RECORD_CONFLICT.of(record["run_id"], conflict))
        self.wh.runs.record_judge_run({**record, "one_order_on_purpose": on_purpose})
        self.report.run_records += 1


def merge_exchange_into(wh: Warehouse, ex: Exchange, secret: str | None = None) -> MergeReport:
    """Merge every result file and run record of `ex` not merged yet (see the module's notes)."""
    merge = _Merge(wh, ex, shared_secret() if secret is None else secret or None)
    done = wh.judging.merged_file_keys()
    todo = [f for f in result_files(ex) if f.key not in done]
    if todo and merge.secret is None:
        _log.warning("judge exchange: %s", unauthenticated(todo))
    for f in todo:
        merge.result_file(f)
    for path in run_record_files(ex):
        merge.run_record(path)
    return merge.report


def unauthenticated(files: list[ResultFile]) -> str:
    """What a merge without the exchange's key says of the files it is about to merge, in one line."""
    signed = sum(1 for f in files if f.parts[3] is not None)
    return (f"merging {len(files)} result files without {KEY_ENV}: nothing merged is authenticated, a file is "
            "only checked against its plan" + (f" ({signed} of them are signed, their signatures unchecked)"
                                               if signed else ""))


def nothing_merged(report: MergeSummary) -> str | None:
    """Why a merge handed the workers' judgments merged none of them (a report of `merge_exchange_into`, as a
    dict): every result file quarantined, or every row rejected; None when it merged some, or got none."""
    files = [q["reason"] for q in report["quarantined"] if q["file"].endswith(".parquet")]
    rejected = sum(report["rejected_rows"].values())
    if report["rows"] or not (files or rejected):
        return None
    parts = []
    if files:
        by_kind = Counter(lookup(reason, ExchangeFileFault) for reason in files)
        first = {kind: next(r for r in files if lookup(r, ExchangeFileFault) is kind) for kind in by_kind}
        parts.append(f"{len(files)} result files moved to quarantine/ ("
                     + "; ".join(f"{first[kind]}: {n}" for kind, n in by_kind.most_common()) + ")")
    if rejected:
        parts.append(f"{rejected} rows rejected ("
                     + ", ".join(f"{r}: {n}" for r, n in Counter(report["rejected_rows"]).most_common()) + ")")
    return "judgments arrived from the workers but none could be merged: " + " and ".join(parts)
