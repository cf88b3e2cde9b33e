"""A version's statistics: what was kept and dropped, by split, source, domain and language; agreement with
human labels; the calibration report; and the bias audit of the pool beside the version's own."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tasks.curate.bias import audit
from tasks.curate.confidence import Confidence
from tasks.curate.select import JudgedPair, VersionRow, pool_preferences, preference


def version_stats(rows: list[VersionRow], dropped: Counter, considered: int, pairs: list[JudgedPair],
                  calibration: dict[str, Any], confidences: dict[str, Confidence] | None = None) -> dict[str, Any]:
    def count(key):
        return dict(sorted(Counter(getattr(r, key) or "unknown" for r in rows).items()))

    agreements = [r.human_agrees for r in rows if r.human_agrees is not None]
    by_id = {p.pair_id: p for p in pairs}
    kept = [preference(by_id[r.pair_id], r.chosen_side) for r in rows]
    probabilities = [r.p_correct for r in rows if r.p_correct is not None]
    return {
        "considered": considered,
        "kept": len(rows),
        "dropped": dict(dropped.most_common()),
        "splits": count("split"),
        "by_source": count("source"),
        "by_domain": count("domain"),
        "by_language": count("language"),
        "judge_human_agreement": round(sum(agreements) / len(agreements), 4) if agreements else None,
        "human_labelled": len(agreements),
        "calibration": {**calibration, "kept_mean_p_correct":
                        round(sum(probabilities) / len(probabilities), 4) if probabilities else None},
        "bias": {"pool": audit(pool_preferences(pairs, confidences)), "kept": audit(kept)},
    }
