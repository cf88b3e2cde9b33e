"""Raw batch -> validated canonical pairs and quarantine records. Pure: no warehouse, no Prefect.

Stages, each of which may quarantine a row with reasons: `read` (not JSON, not an object), `raw` (the
source's pandera schema), `adapter` (the source's mapping: images, multi-turn rule), `pair` (the
canonical pandera schema: history shape, roles, empty or identical responses, judge context, label
range, UTF-8).

A source's adapter may make any number of pairs of one raw row, and reject parts of it (an unusable
completion): each pair is checked on its own, and every part of a row that failed goes into the row's one
quarantine record, so quarantine stays keyed by raw row while the row's good pairs land.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from common.reasons import AdapterRejection, SchemaCheck, lookup
from common.settings import Settings
from schemas.checks import value_faults
from schemas.pair import CandidatePair, Rejection, pair_frame_schema
from tasks.ingest import normalize as nz
from tasks.ingest.declared.registry import settled
from tasks.ingest.declared.source import check_declared_columns, declaration_of, is_settled
from tasks.ingest.read import RawBatch
from tasks.ingest.sources.base import AdapterContext, EvalPrompt, Source
from tasks.ingest.validate import MissingColumnsError, frame_of, missing_columns, row_failures


@dataclass(slots=True)
class QuarantineRecord:
    stage: str
    reasons: list[str]
    position: str
    raw: Any  # the row as read: a dict, or the text of a line that was not one
    source_id: str | None = None
    detail: str = ""

    @property
    def row_hash(self) -> str:
        return nz.row_hash(self.raw)


@dataclass(slots=True)
class PreparedBatch:
    split: str
    read: int
    pairs: list[CandidatePair] = field(default_factory=list)
    pair_ids: list[str] = field(default_factory=list)
    text_facts: list[nz.TextFacts] = field(default_factory=list)  # of each pair, in order
    prompts: list[EvalPrompt] = field(default_factory=list)
    quarantined: list[QuarantineRecord] = field(default_factory=list)
    multi_turn: Counter = field(default_factory=Counter)
    # kept pairs worth knowing of, and how many rows made pairs (see tasks.ingest.summary)
    flags: Counter = field(default_factory=Counter)


_WHOLE_FILE_ROWS = 5
_pair_schema = functools.lru_cache(maxsize=8)(pair_frame_schema)  # built once per token budget, not per batch


def _safe_source_id(source: Source, row: dict[str, Any]) -> str | None:
    """The row's source id as storable text, or None (a row without a usable id is kept under its hash)."""
    try:
        sid = source.source_id(row)
    except Exception:  # noqa: BLE001
        return None
    return nz.printable(sid) if isinstance(sid, str) else None


def check_input_file(source: Source, path: Path | None, batch_size: int, limit: int | None = None,
                     max_row_bytes: int | None = None) -> None:
    """A local file (or a folder in the Hub's layout) that exists, in a format and encoding the reader takes,
    whose first batch has the source's columns (a file of another source is refused before anything runs).
    Damage further in is left to the ingest, which lands what is whole and says where the file is damaged."""
    from common.errors import InvalidInputError, NotFoundError
    from tasks.ingest.read import SourceDamagedError, input_fault, read_path

    if path is None:
        return
    if (fault := input_fault(path)) is not None:  # not a pipe or a device either: reading one would block
        raise (NotFoundError if fault == "no such file" else InvalidInputError)(f"{path}: {fault}")
    batches = read_path(path, source.config, source.splits, batch_size, max_row_bytes)  # a folder: its card's config
    try:
        first = next(iter(batches), None)
    except SourceDamagedError:
        return
    finally:
        batches.close()
    if first is not None and first.rows:
        first.rows = first.rows[:limit]  # what the ingest's first batch holds under --limit
        if not is_settled(source):
            source = settled(source, first.rows)  # a declared `auto` source: the format its columns say
        check_first_batch(first, source, str(path.resolve()))


def check_first_batch(batch: RawBatch, source: Source, where: str) -> None:
    """A column absent from every row of the first batch means the file is not this source at all: stop with
    its name, before anything is written (`curate ingest` asks this before Prefect starts). In a handful of
    rows, or in a later batch (earlier batches are committed), it is just bad rows, quarantined as
    `<column>:missing`. A declared source's columns are its declaration's: one it names that no row of the first
    batch has is refused however few the rows, with the columns the rows have."""
    if declaration_of(source) is not None:
        check_declared_columns(source, batch.rows, where)
        return
    missing = missing_columns(batch.rows, source.raw_schema)
    if missing and len(batch.rows) >= _WHOLE_FILE_ROWS:
        raise MissingColumnsError(missing, where)


def prepare_batch(batch: RawBatch, source: Source, settings: Settings, where: str, *, first: bool = True) -> PreparedBatch:
    """Validate and normalize one batch. `first`: the batch that decides whether the file is of this
    source at all (later batches never stop a run: their rows are quarantined one by one)."""
    out = PreparedBatch(batch.split, read=len(batch))
    for bad in batch.unreadable:
        out.quarantined.append(QuarantineRecord("read", [bad.reason], bad.position, bad.text, detail=bad.error))
    if not batch.rows:
        return out

    if first:
        check_first_batch(batch, source, where)

    # Values no column check can see, anywhere in the row: lone surrogates, NaN, absurd nesting.
    faults = {i: f for i, row in enumerate(batch.rows)
              if (f := value_faults(row, i in batch.deep_check, source.finite_checked_by_adapter))}
    for i, reasons in faults.items():
        out.quarantined.append(QuarantineRecord("raw", reasons, batch.positions[i], batch.rows[i],
                                                _safe_source_id(source, batch.rows[i])))
    sound = [i for i in range(len(batch.rows)) if i not in faults]
    frame = frame_of([batch.rows[i] for i in sound], list(source.raw_schema.columns))
    raw_fail = {sound[k]: r for k, r in row_failures(frame, source.raw_schema).items()}
    adapted: list[tuple[int, Any]] = []  # (row, a pair or prompt it made): a row may make any number
    rejected: dict[int, QuarantineRecord] = {}  # row -> its one quarantine record, whatever parts of it failed
    for i in sound:
        row = batch.rows[i]
        if i in raw_fail:
            out.quarantined.append(
                QuarantineRecord("raw", raw_fail[i], batch.positions[i], row, _safe_source_id(source, row))
            )
            continue
        ctx = AdapterContext(settings, batch.split, batch.positions[i])
        try:
            results = [nz.normalize_pair(r) if isinstance(r, CandidatePair) else r for r in source.adapt(row, ctx)]
        except Exception as err:  # noqa: BLE001 - an adapter bug must not lose the row or crash the run
            # what it made before failing is dropped too: a failing adapter is trusted with none of the row
            results = [Rejection([AdapterRejection.ADAPTER_ERROR.of(type(err).__name__)],
                                 nz.printable(str(err))[:500])]
        if not results:  # a row that vanished without a word would break the count of rows read
            results = [Rejection([AdapterRejection.ADAPTER_MADE_NOTHING])]
        for result in results:
            if not isinstance(result, Rejection):
                adapted.append((i, result))
                continue
            _reject(rejected, i, "adapter", result.reasons, result.detail, batch, _safe_source_id(source, row))
            if AdapterRejection.MULTI_TURN_DIVERGENT_HISTORY in result.reasons:
                out.multi_turn["quarantined_divergent"] += 1

    if source.kind == "eval_prompts":
        out.prompts = [p for _, p in adapted]
        out.quarantined += [rejected[i] for i in sorted(rejected)]
        return out

    pairs = [p for _, p in adapted]
    facts = [nz.pair_text_facts(p) for p in pairs]
    utf8_ok = [f.valid for f in facts]
    sizes = [f.size for f in facts]
    # the columns straight from the pairs (a dict per pair, then a column per key, cost twice as much)
    frame = pd.DataFrame({
        "source": pd.Series([p.source for p in pairs], dtype=object),
        "source_id": pd.Series([p.source_id for p in pairs], dtype=object),
        "history": pd.Series([p.history for p in pairs], dtype=object),
        "response_a": pd.Series([nz.printable(p.response_a) for p in pairs], dtype=object),
        "response_b": pd.Series([nz.printable(p.response_b) for p in pairs], dtype=object),
        "human_label": pd.Series([p.human_label for p in pairs], dtype=object),
        "raw_label": pd.Series([p.raw_label for p in pairs], dtype=object),
        "domain": pd.Series([p.domain for p in pairs], dtype=object),
        "language": pd.Series([p.language for p in pairs], dtype=object),
        "utf8_bytes": pd.Series(sizes, dtype=object),
        "text": pd.Series(utf8_ok, dtype=object),
    }, index=pd.RangeIndex(len(pairs)))
    frame["human_label"] = pd.to_numeric(frame["human_label"], errors="coerce")
    frame["utf8_bytes"] = frame["utf8_bytes"].astype("int64")
    frame["text"] = frame["text"].astype(bool)
    pair_fail = row_failures(frame, _pair_schema(settings.judge_input_budget))
    made = Counter(i for i, _ in adapted)
    paired: set[int] = set()
    for k, ((i, _), pair) in enumerate(zip(adapted, pairs)):
        if k in pair_fail:
            detail = (f"{sizes[k]} bytes of text"
                      if any(lookup(r) is SchemaCheck.FITS_JUDGE_CONTEXT for r in pair_fail[k]) else "")
            if made[i] > 1:  # the row's record says which of its pairs failed; its source id is the row's
                detail = f"{pair.source_id}: {detail}" if detail else pair.source_id
            _reject(rejected, i, "pair", pair_fail[k], detail, batch,
                    _safe_source_id(source, batch.rows[i]) if made[i] > 1 else pair.source_id)
            continue
        if sum(m["role"] == "user" for m in pair.history) > 1:
            out.multi_turn["kept_shared_history"] += 1
        if pair.metadata.get("context_dropped"):
            out.multi_turn["kept_context_dropped"] += 1
        if "response_a_reasoning_trace" in pair.metadata or "response_b_reasoning_trace" in pair.metadata:
            out.flags["reasoning_trace_stripped"] += 1
        if facts[k].tokens > settings.judge_input_budget:
            out.flags["estimate_over_budget"] += 1
        paired.add(i)
        out.pairs.append(pair)
        out.pair_ids.append(nz.pair_id(pair.history, pair.response_a, pair.response_b))
        out.text_facts.append(facts[k])
    out.quarantined += [rejected[i] for i in sorted(rejected)]
    # rows, not pairs: read = rows_paired + quarantined rows - rows_partly_quarantined (see tasks.ingest.summary)
    out.flags["rows_paired"] += len(paired)
    out.flags["rows_partly_quarantined"] += len(paired & rejected.keys())
    return out


def _reject(rejected: dict[int, QuarantineRecord], i: int, stage: str, reasons: list[str], detail: str,
            batch: RawBatch, source_id: str | None) -> None:
    """Record why part or all of row `i` failed, in the row's one quarantine record (its key is the raw row's
    hash and position): a row whose parts fail at two stages keeps the first stage and every reason."""
    record = rejected.get(i)
    if record is None:
        rejected[i] = QuarantineRecord(stage, list(reasons), batch.positions[i], batch.rows[i], source_id, detail)
        return
    record.reasons += [r for r in reasons if r not in record.reasons]
    if detail:
        record.detail = f"{record.detail}; {detail}" if record.detail else detail
