"""What a version does with the stored findings: the pairs a policy drops, and the counts per kind."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from schemas.pair import PII_FINDING_SCHEMA
from tasks.curate.personal_data import dropping, pii_stats
from tasks.ingest.pii import KINDS

FINDINGS = pa.table({"pair_id": ["a", "a", "b", "c"], "part": ["history"] * 4, "message": [0, 0, 0, 0],
                     "kind": ["email", "secret", "email", "phone"], "span_start": [0, 10, 0, 0],
                     "span_end": [5, 20, 5, 5]}, schema=PII_FINDING_SCHEMA)
IDS = np.array(["a", "b", "c", "d"], dtype=object)


def _actions(default: str, **kinds: str) -> dict[str, str]:
    return {k: kinds.get(k, default) for k in KINDS}


def test_only_pairs_holding_a_kind_the_policy_drops_are_dropped() -> None:
    assert dropping(FINDINGS, IDS, _actions("redact")) is None
    assert dropping(FINDINGS, IDS, _actions("redact", secret="drop")).tolist() == [True, False, False, False]
    assert dropping(FINDINGS, IDS, _actions("drop")).tolist() == [True, True, True, False]


def test_the_counts_say_what_was_found_in_the_pool_and_done_in_the_version() -> None:
    kept = np.array([1, 2, 3])  # "a" left out (its secret is dropped)
    stats = pii_stats(FINDINGS, IDS, kept, _actions("redact", secret="drop", phone="keep"), scanned=4)
    assert stats["kinds"]["email"] == {"action": "redact", "pairs": 2, "findings": 2, "version_pairs": 1,
                                       "version_findings": 1}
    assert stats["kinds"]["secret"]["version_findings"] == 0 and stats["kinds"]["card"]["findings"] == 0
    assert (stats["redacted"], stats["kept"], stats["dropped_pairs"]) == (1, 1, 1)
    assert stats["scanned_pairs"] == 4 and stats["not_scanned"] == "names and street addresses"
