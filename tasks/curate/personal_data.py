"""What a version does with the personal data and secrets the ingest found in its pairs' texts (the policy's
`pii`, per kind `pii_kinds`): `redact` replaces each finding by its kind's placeholder in the version's texts,
`drop` leaves the pair out (reason `personal_data`), `keep` leaves the texts as found. The warehouse's pairs
keep their texts as ingested; the findings are read as stored (`warehouse.pii`), never scanned again here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tasks.ingest.pii import KINDS, MODEL_KINDS
from tasks.ingest.pii_facts import redacted_pair
from warehouse.pii import PiiStore
from warehouse.versions import NO_REDACTION, REDACTED_SCHEMA

# what the card says is never looked for
NOT_SCANNED = "names and street addresses"


def dropping(findings: pa.Table, pair_ids: np.ndarray, actions: Mapping[str, str]) -> np.ndarray | None:
    """Per pair of `pair_ids`, whether it holds a finding of a kind the policy drops; None when it drops none."""
    kinds = [k for k, action in actions.items() if action == "drop"]
    if not kinds:
        return None
    hit = pc.filter(findings.column("pair_id"), pc.is_in(findings.column("kind"), pa.array(kinds)))
    return np.isin(pair_ids.astype(str), np.asarray(pc.unique(hit).to_pylist(), dtype=str))


def redacted_texts(store: PiiStore, pair_ids: pa.ChunkedArray | pa.Array, actions: Mapping[str, str]) -> pa.Table:
    """The texts of the pairs among `pair_ids` that hold a finding the policy redacts, each such finding
    replaced by its placeholder (`REDACTED_SCHEMA`); empty when nothing is redacted."""
    kinds = {k for k, action in actions.items() if action == "redact"}
    findings = store.findings_of(pair_ids) if kinds else None
    if findings is None or not findings.num_rows:
        return NO_REDACTION
    findings = findings.filter(pc.is_in(findings.column("kind"), pa.array(sorted(kinds))))
    by_pair: dict[str, list[tuple[str, int, str, int, int]]] = {}
    for pair_id, part, message, kind, start, end in zip(*(findings.column(c).to_pylist() for c in (
            "pair_id", "part", "message", "kind", "span_start", "span_end")), strict=True):
        by_pair.setdefault(pair_id, []).append((part, message, kind, start, end))
    if not by_pair:
        return NO_REDACTION
    texts = store.texts_of(pa.array(sorted(by_pair), pa.string()))
    out: dict[str, list] = {name: [] for name in REDACTED_SCHEMA.names}
    for pair_id, history, a, b in zip(*(texts.column(c).to_pylist() for c in REDACTED_SCHEMA.names), strict=True):
        history, a, b = redacted_pair(history, a, b, by_pair[pair_id], kinds)
        for name, value in zip(REDACTED_SCHEMA.names, (pair_id, history, a, b), strict=True):
            out[name].append(value)
    return pa.table(out, schema=REDACTED_SCHEMA)


def pii_stats(findings: pa.Table, pair_ids: np.ndarray, kept: np.ndarray, actions: Mapping[str, str],
              scanned: int, models: Mapping[str, int] | None = None) -> dict[str, Any]:
    """What was found in the judged pool's pairs and what the version did, per kind: `pairs` and `findings` in
    the pool, the `action`, and `version_pairs` / `version_findings`: of those, what is in the version's rows
    (replaced by placeholders under redact, as found under keep; none under drop). `redacted`, `kept` and
    `dropped_pairs` total them; `scanned`: the pool's pairs the scan has read; `models`: of those, how many each
    detector model read (names and street addresses are counted only where one did); `not_scanned`: what was
    never looked for (None when a model read every scanned pair)."""
    models = dict(models or {})
    every = (*KINDS, *MODEL_KINDS) if models else KINDS
    in_version = set(pair_ids[kept].astype(str).tolist())
    kinds: dict[str, dict[str, Any]] = {}
    rows = zip(findings.column("pair_id").to_pylist(), findings.column("kind").to_pylist(), strict=True)
    pairs: dict[str, set[str]] = {k: set() for k in every}
    counts: dict[str, int] = dict.fromkeys(every, 0)
    version_counts: dict[str, int] = dict.fromkeys(every, 0)
    for pair_id, kind in rows:
        pairs[kind].add(pair_id)
        counts[kind] += 1
        version_counts[kind] += pair_id in in_version
    for kind in every:
        kinds[kind] = {"action": actions[kind], "pairs": len(pairs[kind]), "findings": counts[kind],
                       "version_pairs": len(pairs[kind] & in_version), "version_findings": version_counts[kind]}
    dropped = set().union(*(pairs[k] for k in every if actions[k] == "drop")) - in_version
    every_read = bool(models) and sum(models.values()) >= scanned
    return {"scanned_pairs": scanned, "models": models, "not_scanned": None if every_read else NOT_SCANNED,
            "kinds": kinds,
            "redacted": sum(v["version_findings"] for v in kinds.values() if v["action"] == "redact"),
            "kept": sum(v["version_findings"] for v in kinds.values() if v["action"] == "keep"),
            "dropped_pairs": len(dropped)}
