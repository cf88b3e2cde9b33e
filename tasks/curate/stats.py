"""A version's statistics: what was kept and dropped, by split, source, domain and language; agreement with
human labels; the calibration report; and the bias audit of the pool beside the version's own."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tasks.curate.bias import audit
from tasks.curate.confidence import Confidences
from tasks.curate.pool import JudgedPool
from tasks.curate.select import pool_index, preferences


def _counts(column: pa.ChunkedArray) -> dict[str, int]:
    """Values counted, None and "" as "unknown", sorted by value."""
    out: Counter = Counter()
    for item in pc.value_counts(column).to_pylist():
        out[item["values"] or "unknown"] += item["counts"]
    return dict(sorted(out.items()))


def version_stats(pool: JudgedPool, c: Confidences, table: pa.Table, kept: np.ndarray, dropped: Counter,
                  calibration: dict[str, Any]) -> dict[str, Any]:
    """`table`: the kept rows (`select.version_table`); `kept`: their pool indices."""
    agreements = table.column("human_agrees").drop_null()
    agreed = int(pc.sum(agreements).as_py() or 0)
    probabilities = table.column("p_correct").drop_null()
    return {
        "considered": len(pool),
        "kept": table.num_rows,
        "dropped": dict(dropped.most_common()),
        "splits": _counts(table.column("split")),
        "by_source": _counts(table.column("source")),
        "by_domain": _counts(table.column("domain")),
        "by_language": _counts(table.column("language")),
        "judge_human_agreement": round(agreed / len(agreements), 4) if len(agreements) else None,
        "human_labelled": len(agreements),
        "calibration": {**calibration, "kept_mean_p_correct":
                        round(pc.mean(probabilities).as_py(), 4) if len(probabilities) else None},
        "bias": {"pool": audit(preferences(pool, c, pool_index(c))), "kept": audit(preferences(pool, c, kept))},
    }
