"""A version's statistics: what was judged, kept and dropped, by split, source, domain and language; agreement
with human labels; the calibration report; and the bias audit of the pool beside the version's own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tasks.curate.bias import audit
from tasks.curate.confidence import Confidences
from tasks.curate.figures import version_figures
from tasks.curate.pool import JudgedPool
from tasks.curate.select import pool_index, preferences
from tasks.ingest.source_facts import SourceFacts, facts_in


def _counts(column: pa.ChunkedArray) -> dict[str, int]:
    """Values counted, None and "" as "unknown", sorted by value."""
    out: Counter = Counter()
    for item in pc.value_counts(column).to_pylist():
        out[item["values"] or "unknown"] += item["counts"]
    return dict(sorted(out.items()))


def source_facts_stats(pool: JudgedPool, facts: Mapping[str, SourceFacts]) -> dict[str, dict[str, Any]]:
    """Each source of the judged pool: its pairs, how many carry a label, and what its facts say of the labels
    (people's or not, the clear label) and where those facts were read (`SourceFacts.origin`): what the card
    says of the labels the calibration read."""
    names, codes = np.unique(pool.source.astype(str), return_inverse=True) if len(pool) else (np.array([]), None)
    labelled = ~np.isnan(pool.human_label)
    out = {}
    for k, name in enumerate(names.tolist()):
        mine = codes == k
        f = facts_in(facts, name)
        out[name] = {"pairs": int(mine.sum()), "labelled": int((mine & labelled).sum()),
                     "human_labels": f.human_labels, "clear_label": f.clear_label, "facts": f.origin}
    return out


def version_stats(pool: JudgedPool, c: Confidences, table: pa.Table, kept: np.ndarray, dropped: Counter,
                  calibration: dict[str, Any], facts: Mapping[str, SourceFacts]) -> dict[str, Any]:
    """`table`: the kept rows (`select.version_table`); `kept`: their pool indices; `facts`: each source's, as
    the warehouse stores them. The counts every surface shows come from `tasks.curate.figures`."""
    probabilities = table.column("p_correct").drop_null()
    return {
        **version_figures(c.verdicts, c.direction, pool.contaminated, pool.human_label, pool.both_bad, kept, dropped),
        "splits": _counts(table.column("split")),
        "by_source": _counts(table.column("source")),
        "by_domain": _counts(table.column("domain")),
        "by_language": _counts(table.column("language")),
        "calibration": {**calibration, "kept_mean_p_correct":
                        round(pc.mean(probabilities).as_py(), 4) if len(probabilities) else None},
        "bias": {"pool": audit(preferences(pool, c, pool_index(c))), "kept": audit(preferences(pool, c, kept))},
        "source_facts": source_facts_stats(pool, facts),
    }
