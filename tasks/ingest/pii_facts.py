"""The personal-data scan of pairs as the warehouse stores it: each pair's texts (every history message and both
answers) scanned once (`tasks.ingest.pii`), each finding kept as its kind, part, message and span, never the
text; and the texts with chosen findings replaced by their placeholders, as a version publishes them.

The ingest scans the pairs it lands (`scan_tables`, written in the batch's transaction). Pairs landed before the
scan existed, or scanned under older rules (`pii.RULES`), are scanned by `backfill`: a migration-like pass over
the warehouse that changes no pair and no pair id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

import pyarrow as pa

from schemas.pair import PII_FINDING_SCHEMA, PII_SCAN_SCHEMA
from tasks.ingest.pii import RULES, Finding, redact, scan_texts
from warehouse.pii import PiiStore

PARTS = ("history", "response_a", "response_b")
Message = Mapping[str, str]


def scan_tables(pair_ids: Sequence[str], histories: Sequence[Sequence[Message]], responses_a: Sequence[str],
                responses_b: Sequence[str], now: datetime | None = None) -> tuple[pa.Table, pa.Table]:
    """(scans, findings) of these pairs: one scan row per pair (the rules it was scanned under), one row per
    finding (pair id, part, message index, kind, span)."""
    now = now or datetime.now(timezone.utc).replace(tzinfo=None)
    texts: list[str] = []
    where: list[tuple[str, str, int]] = []
    for pair_id, history, a, b in zip(pair_ids, histories, responses_a, responses_b, strict=True):
        for i, message in enumerate(history):
            texts.append(message["content"] or "")
            where.append((pair_id, "history", i))
        texts += [a or "", b or ""]
        where += [(pair_id, "response_a", 0), (pair_id, "response_b", 0)]
    rows: dict[str, list] = {name: [] for name in PII_FINDING_SCHEMA.names}
    for (pair_id, part, message), findings in zip(where, scan_texts(texts), strict=True):
        for f in findings:
            for name, value in zip(PII_FINDING_SCHEMA.names, (pair_id, part, message, f.kind, f.start, f.end),
                                   strict=True):
                rows[name].append(value)
    scans = pa.table({"pair_id": list(pair_ids), "rules": [RULES] * len(pair_ids),
                      "scanned_at": [now] * len(pair_ids)}, schema=PII_SCAN_SCHEMA)
    return scans, pa.table(rows, schema=PII_FINDING_SCHEMA)


def backfill(store: PiiStore, batch: int = 5000) -> int:
    """Scan the pairs not scanned under the current rules (landed before the scan, or under older rules), a
    batch per transaction; the number scanned. Nothing else of a pair changes."""
    done = 0
    for texts in store.unscanned(RULES, batch):
        scans, findings = scan_tables(texts.column("pair_id").to_pylist(), texts.column("history").to_pylist(),
                                      texts.column("response_a").to_pylist(), texts.column("response_b").to_pylist())
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
