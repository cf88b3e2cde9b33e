"""Landing a prepared batch: classify every valid row (already ingested, exact duplicate, near
duplicate, new), flag contamination, and write it all to the warehouse in one transaction."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from schemas.pair import (
    CANDIDATE_PAIR_SCHEMA,
    CONTAMINATION_SCHEMA,
    NEAR_DUPLICATE_SCHEMA,
    QUARANTINE_SCHEMA,
    SIGHTING_SCHEMA,
    SIGNATURE_SCHEMA,
)
from tasks.ingest import normalize as nz
from tasks.ingest.decontam import Decontaminator, prompt_text
from tasks.ingest.dedup import NearDupIndex, first_occurrences, near_dup_text
from tasks.ingest.pii_facts import scan_pairs
from tasks.ingest.prepare import PreparedBatch
from warehouse.ingest import IngestStore


@dataclass
class BatchCounts:
    """What batches counted, summed field by field (`add`): a counter added here is summed with no other change."""

    read: int = 0
    valid: int = 0
    quarantined: Counter = field(default_factory=Counter)  # reason -> rows
    quarantined_rows: int = 0
    new_quarantined: int = 0
    already_ingested: int = 0
    exact_duplicates: int = 0
    near_duplicates: int = 0
    new_pairs: int = 0
    contaminated: int = 0
    multi_turn: Counter = field(default_factory=Counter)
    flags: Counter = field(default_factory=Counter)

    def add(self, other: BatchCounts) -> None:
        """Add `other`'s counts to these: numbers summed, tallies (Counters) merged key by key."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, Counter):
                mine.update(theirs)
            elif isinstance(mine, int | float) and not isinstance(mine, bool):
                setattr(self, f.name, mine + theirs)
            else:  # a field that cannot be summed must not be passed over in silence
                raise TypeError(f"BatchCounts.{f.name} is a {type(mine).__name__}: neither a number nor a Counter")


class BackgroundWriter:
    """One warehouse write at a time, off the main thread: DuckDB releases the GIL while it inserts and
    commits, so the next batch is read and validated meanwhile (measured: the writes were a quarter of
    the ingest). `wait()` re-raises a failed write, so no failure goes unseen.

    As a context manager it waits for the write in flight on the way out, error or not: the writer uses the
    warehouse's one connection, and DuckDB refuses a second caller ("connection is busy") rather than wait. On
    an error the write still finishes; if it fails too, the first error stays the one raised and the write's
    is kept in `failed`."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warehouse-writer")
        self._pending: Future | None = None
        self.failed: BaseException | None = None

    def submit(self, fn, /, **kwargs) -> None:
        self.wait()
        self._pending = self._pool.submit(fn, **kwargs)

    def wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except Exception as err:  # noqa: BLE001 - the error already raised is the one to report
            self.failed = err


def _call(fn, /, **kwargs) -> None:
    fn(**kwargs)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _quarantine_table(prepared: PreparedBatch, source: str, revision: str, run_id: str, now: datetime) -> pa.Table:
    q = prepared.quarantined
    return pa.table({
        "source": [source] * len(q),
        "row_hash": [r.row_hash for r in q],
        "source_id": [r.source_id for r in q],
        "source_revision": [revision] * len(q),
        "stage": [r.stage for r in q],
        "reasons": [r.reasons for r in q],
        "detail": [nz.printable(r.detail) for r in q],
        "position": [nz.printable(r.position) for r in q],
        "raw_row": [nz.printable(r.raw) if isinstance(r.raw, str) else nz.to_json(r.raw) for r in q],
        "ingest_run_id": [run_id] * len(q),
        "quarantined_at": [now] * len(q),
    }, schema=QUARANTINE_SCHEMA)


@dataclass
class Classification:
    """What each valid row of a batch is, decided against what the warehouse already holds."""

    fresh: list[int] = field(default_factory=list)  # rows whose sighting is recorded now
    new: list[int] = field(default_factory=list)  # rows that make a new pair (before the near-duplicate check)
    swapped: dict[int, bool] = field(default_factory=dict)  # fresh duplicates: A and B the other way round
    already_ingested: int = 0
    exact_duplicates: int = 0


def classify(source_ids: list[str], pair_ids: list[str], responses_a: list[str], run_id: str,
             seen: dict[tuple[str, str], str], known: dict[str, bool]) -> Classification:
    """Pure: each row's fate from the warehouse's answers. `seen`: (source id, pair id) -> the run that
    recorded that sighting; `known`: pair id -> whether the stored pair's response A is this row's.

    A row seen by an earlier run is already ingested. The same row twice in this run (an identical line
    repeated in the source) is an exact duplicate, recorded once; so is a second sighting of a known pair.
    """
    out = Classification()
    for k, key in enumerate(zip(source_ids, pair_ids)):
        run = seen.get(key)
        if run is None:
            out.fresh.append(k)
        elif run == run_id:
            out.exact_duplicates += 1
        else:
            out.already_ingested += 1
    repeated = first_occurrences([f"{source_ids[k]}\0{pair_ids[k]}" for k in out.fresh])
    out.exact_duplicates += sum(d is not None for d in repeated)
    out.fresh = [k for k, d in zip(out.fresh, repeated) if d is None]
    earlier = first_occurrences([pair_ids[k] for k in out.fresh])
    for k, e in zip(out.fresh, earlier):
        if e is not None:
            out.swapped[k] = responses_a[k] != responses_a[out.fresh[e]]
        elif pair_ids[k] in known:
            out.swapped[k] = not known[pair_ids[k]]
        else:
            out.new.append(k)
    out.exact_duplicates += len(out.fresh) - len(out.new)
    return out


def _sightings_table(prepared: PreparedBatch, c: Classification, source: str, revision: str, run_id: str,
                     now: datetime) -> pa.Table:
    pairs, ids, first = prepared.pairs, prepared.pair_ids, set(c.new)
    rows = c.fresh
    return pa.table({
        "source": [source] * len(rows), "source_id": [pairs[k].source_id for k in rows], "pair_id": [ids[k] for k in rows],
        "source_revision": [revision] * len(rows), "human_label": [pairs[k].human_label for k in rows],
        "raw_label": [pairs[k].raw_label for k in rows], "swapped": [c.swapped.get(k, False) for k in rows],
        "is_first": [k in first for k in rows], "ingest_run_id": [run_id] * len(rows), "seen_at": [now] * len(rows),
    }, schema=SIGHTING_SCHEMA)


def _pairs_table(prepared: PreparedBatch, rows: list[int], source: str, revision: str, run_id: str,
                 now: datetime) -> pa.Table:
    pairs = prepared.pairs
    return pa.table({
        "pair_id": [prepared.pair_ids[k] for k in rows], "source": [source] * len(rows),
        "source_id": [pairs[k].source_id for k in rows], "source_revision": [revision] * len(rows),
        "history": [pairs[k].history for k in rows], "response_a": [pairs[k].response_a for k in rows],
        "response_b": [pairs[k].response_b for k in rows], "human_label": [pairs[k].human_label for k in rows],
        "raw_label": [pairs[k].raw_label for k in rows], "both_bad": [pairs[k].both_bad for k in rows],
        "domain": [pairs[k].domain for k in rows], "language": [pairs[k].language for k in rows],
        "metadata": [nz.to_json(pairs[k].metadata) for k in rows],
        "est_tokens": [prepared.text_facts[k].tokens for k in rows],
        "prompt_tokens": [prepared.text_facts[k].prompt_tokens for k in rows],
        "response_a_tokens": [prepared.text_facts[k].response_a_tokens for k in rows],
        "response_b_tokens": [prepared.text_facts[k].response_b_tokens for k in rows], "ingest_run_id": [run_id] * len(rows),
        "ingested_at": [now] * len(rows),
    }, schema=CANDIDATE_PAIR_SCHEMA)


def land_batch(
    store: IngestStore,
    prepared: PreparedBatch,
    *,
    source: str,
    revision: str,
    run_id: str,
    index: NearDupIndex,
    decontaminator: Decontaminator | None,
    writer: BackgroundWriter | None = None,
) -> BatchCounts:
    """Classify a prepared batch against the warehouse and write it (in the background with `writer`)."""
    if writer is not None:
        writer.wait()  # the look-ups below must see the previous batch committed
    now = _now()
    counts = BatchCounts(read=prepared.read, valid=len(prepared.pairs), multi_turn=Counter(prepared.multi_turn),
                         flags=Counter(prepared.flags))
    counts.quarantined_rows = len(prepared.quarantined)
    for r in prepared.quarantined:
        counts.quarantined.update(r.reasons)
    q_keys = {(r.row_hash, r.position) for r in prepared.quarantined}
    counts.new_quarantined = len(q_keys - store.known_quarantine(source, sorted(q_keys)))

    pairs, ids = prepared.pairs, prepared.pair_ids
    source_ids, responses_a = [p.source_id for p in pairs], [p.response_a for p in pairs]
    first_a = dict(reversed(list(zip(ids, responses_a))))  # each pair id's first response A in the batch
    c = classify(source_ids, ids, responses_a, run_id, store.known_sightings(source, list(zip(source_ids, ids))),
                 store.known_pair_ids(list(first_a), list(first_a.values())))
    counts.already_ingested, counts.exact_duplicates = c.already_ingested, c.exact_duplicates

    new = c.new
    sigs = index.signatures_of([near_dup_text(pairs[k].history, pairs[k].response_a, pairs[k].response_b) for k in new])
    verdicts = index.assign([ids[k] for k in new], sigs)
    counts.near_duplicates = sum(d is not None for d in verdicts.duplicate_of)
    counts.new_pairs = len(new) - counts.near_duplicates

    contamination_rows = []
    if decontaminator is not None and len(decontaminator):
        for k, dup_of in zip(new, verdicts.duplicate_of):
            if dup_of is not None:
                continue
            hits = decontaminator.check(prompt_text(pairs[k].history))
            if hits:
                counts.contaminated += 1
                contamination_rows += [(ids[k], h.benchmark, h.benchmark_id, h.overlap) for h in hits]

    near = [(ids[k], d, s) for k, d, s in zip(new, verdicts.duplicate_of, verdicts.similarity) if d is not None]
    kept = [(ids[k], sigs[j]) for j, (k, d) in enumerate(zip(new, verdicts.duplicate_of)) if d is None]
    new_pairs = _pairs_table(prepared, new, source, revision, run_id, now)
    # personal data and secrets in the new pairs' texts, scanned once here and stored with them (kind, part, span)
    pii_scans, pii_findings = scan_pairs(new_pairs.select(["pair_id", "history", "response_a", "response_b"]), now)
    (writer.submit if writer is not None else _call)(
        store.write_ingest_batch,
        pairs=new_pairs,
        # The sighting of every fresh row is recorded, duplicates included: nothing read is forgotten.
        sightings=_sightings_table(prepared, c, source, revision, run_id, now),
        quarantine=_quarantine_table(prepared, source, revision, run_id, now),
        near_duplicates=pa.table({"pair_id": [n[0] for n in near], "kept_pair_id": [n[1] for n in near],
                                  "similarity": [n[2] for n in near], "ingest_run_id": [run_id] * len(near)},
                                 schema=NEAR_DUPLICATE_SCHEMA),
        signatures=pa.table({"pair_id": [k[0] for k in kept], "num_perm": [index.num_perm] * len(kept),
                             "signature": [k[1].astype("<u4").tobytes() for k in kept]}, schema=SIGNATURE_SCHEMA),
        band_keys=index.stored_keys(np.stack([k[1] for k in kept])) if kept else None,
        contamination=contamination_table(contamination_rows, now),
        pii_scans=pii_scans, pii_findings=pii_findings,
    )
    return counts


def contamination_table(rows: list[tuple[str, str, str, float]], now: datetime) -> pa.Table:
    """(pair id, benchmark, benchmark id, overlap) rows as the contamination table holds them."""
    return pa.table({"pair_id": [r[0] for r in rows], "benchmark": [r[1] for r in rows],
                     "benchmark_id": [r[2] for r in rows], "overlap": [r[3] for r in rows],
                     "detected_at": [now] * len(rows)}, schema=CONTAMINATION_SCHEMA)


def flag_contamination(store: IngestStore, decontaminator: Decontaminator) -> int:
    """Check every pair in the warehouse against the evaluation prompts; return how many are flagged."""
    if len(decontaminator):
        rows = [
            (pid, hit)
            for ids, histories in store.iter_pair_histories()
            for pid, hist in zip(ids, histories)
            for hit in decontaminator.check(prompt_text(hist))
        ]
        if rows:
            store.write_table("contamination", contamination_table(
                [(pid, h.benchmark, h.benchmark_id, h.overlap) for pid, h in rows], _now()))
    return store.count_contaminated()
