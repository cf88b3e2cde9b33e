"""What changed between two versions of a dataset (pure)."""

from __future__ import annotations

from collections import Counter
from statistics import fmean
from typing import Any


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "rows": len(rows),
        "mean_margin": round(fmean(r["margin"] for r in rows), 4) if rows else None,
        "mean_confidence": round(fmean(r["confidence"] for r in rows), 4) if rows else None,
        "by_source": dict(sorted(Counter(r["source"] for r in rows).items())),
        "by_split": dict(sorted(Counter(r["split"] for r in rows).items())),
    }


def diff_versions(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, Any]:
    """Pairs added, removed and flipped (the judge now prefers the other response), and moved statistics."""
    a = {r["pair_id"]: r for r in old}
    b = {r["pair_id"]: r for r in new}
    both = a.keys() & b.keys()
    return {
        "added": sorted(b.keys() - a.keys()),
        "removed": sorted(a.keys() - b.keys()),
        "flipped": sorted(p for p in both if a[p]["chosen_side"] != b[p]["chosen_side"]),
        "before": _stats(old),
        "after": _stats(new),
    }
