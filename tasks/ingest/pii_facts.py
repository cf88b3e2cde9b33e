"""The personal-data scan of pairs as the warehouse stores it: each pair's texts (every history message and both
answers) scanned once (`tasks.ingest.pii`), each finding kept as its kind, part, message and span, never the
text; and the texts with chosen findings replaced by their placeholders, as a version publishes them.

The ingest scans the pairs it lands (`scan_tables`, written in the batch's transaction). Pairs landed before the
scan existed, or scanned under other rules (`pii.RULES`, and the detector model where one is configured:
`pii_detector.rules_of`), are scanned by `backfill`: a migration-like pass over
the warehouse that changes no pair and no pair id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.pair import MESSAGE_TYPE, PII_FINDING_SCHEMA, PII_SCAN_SCHEMA
from tasks.ingest.pii import Finding, gated, redact, scan
from tasks.ingest.pii_detector import Detector, configured_detector, rules_of
from warehouse.pii import PiiStore

PARTS = ("history", "response_a", "response_b")
Message = Mapping[str, str]


def scan_tables(pair_ids: Sequence[str], histories: Sequence[Sequence[Message]], responses_a: Sequence[str],
                responses_b: Sequence[str], now: datetime | None = None,
                detector: Detector | None | object = None) -> tuple[pa.Table, pa.Table]:
    """`scan_pairs` of pairs given as Python values (no detector model unless one is given)."""
    return scan_pairs(pa.table({"pair_id": pa.array(list(pair_ids), pa.string()),
                                "history": pa.array([list(h) for h in histories], pa.list_(MESSAGE_TYPE)),
                                "response_a": pa.array(list(responses_a), pa.string()),
                                "response_b": pa.array(list(responses_b), pa.string())}), now, detector)


_CONFIGURED = object()


def scan_pairs(pairs: pa.Table, now: datetime | None = None,
               detector: Detector | None | object = _CONFIGURED) -> tuple[pa.Table, pa.Table]:
    """(scans, findings) of the pairs of `pairs` (its `pair_id`, `history`, `response_a` and `response_b`, as the
    warehouse holds them): one scan row per pair (the rules it was scanned under), one row per finding (pair id,
    part, message index, kind, span). Only the texts `pii.gated` passes are read into Python and scanned by the
    rules; a detector model (by default the configured one, `pii_detector`) reads every text, its spans kept
    where no rule's finding is."""
    if detector is _CONFIGURED:
        detector = configured_detector()
    now = now or datetime.now(timezone.utc).replace(tzinfo=None)
    ids = pairs.column("pair_id").combine_chunks()
    history = pairs.column("history").combine_chunks()
    contents = pc.struct_field(pc.list_flatten(history), "content")
    parents = pc.list_parent_indices(history).to_numpy()
    offsets = history.offsets.to_numpy()
    messages = offsets[0] + np.arange(len(contents)) - offsets[parents]
    rows: dict[str, list] = {name: [] for name in PII_FINDING_SCHEMA.names}
    for part, texts, owner, message in (
            ("history", contents, parents, messages),
            ("response_a", pairs.column("response_a").combine_chunks(), np.arange(len(ids)), None),
            ("response_b", pairs.column("response_b").combine_chunks(), np.arange(len(ids)), None)):
        found = {int(i): scan(texts[int(i)].as_py()) for i in np.flatnonzero(gated(texts))}
        if detector is not None:
            for i, spans in enumerate(detector.findings([t or "" for t in texts.to_pylist()])):
                ruled = found.get(i, [])
                extra = [f for f in spans if all(f.end <= r.start or f.start >= r.end for r in ruled)]
                if extra:
                    found[i] = sorted([*ruled, *extra], key=lambda f: f.start)
        for i in sorted(found):
            for f in found[i]:
                for name, value in zip(PII_FINDING_SCHEMA.names, (
                        ids[int(owner[i])].as_py(), part, 0 if message is None else int(message[i]), f.kind, f.start,
                        f.end), strict=True):
                    rows[name].append(value)
    order = sorted(range(len(rows["pair_id"])), key=lambda k: (rows["pair_id"][k], PARTS.index(rows["part"][k]),
                                                                rows["message"][k], rows["span_start"][k]))
    findings = pa.table({name: [values[k] for k in order] for name, values in rows.items()}, schema=PII_FINDING_SCHEMA)
    scans = pa.table({"pair_id": ids, "rules": pa.array([rules_of(detector)] * len(ids), pa.string()),
                      "scanned_at": pa.array([now] * len(ids), PII_SCAN_SCHEMA.field("scanned_at").type)},
                     schema=PII_SCAN_SCHEMA)
    return scans, findings


def backfill(store: PiiStore, batch: int = 5000) -> int:
    """Scan the pairs not scanned under the current rules (landed before the scan, under older rules, or with
    another detector model or none), a batch per transaction; the number scanned. Nothing else of a pair
    changes."""
    detector = configured_detector()
    done = 0
    for texts in store.unscanned(rules_of(detector), batch):
        scans, findings = scan_pairs(texts, detector=detector)
        store.replace(scans, findings)
        done += texts.num_rows
    return done


def redacted_pair(history: list[dict], response_a: str, response_b: str, findings: list[tuple[str, int, str, int, int]],
                  kinds: set[str]) -> tuple[list[dict], str, str]:
    """The pair's texts with each finding of `kinds` replaced by its placeholder. `findings`: (part, message,
    kind, start, end) of this pair."""
    def spans(part: str, message: int) -> list[Finding]:
        return [Finding(k, s, e) for p, m, k, s, e in findings if p == part and m == message and k in kinds]

    history = [{**m, "content": redact(m["content"], spans("history", i)) if spans("history", i) else m["content"]}
               for i, m in enumerate(history)]
    return history, redact(response_a, spans("response_a", 0)), redact(response_b, spans("response_b", 0))
