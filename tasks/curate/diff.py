"""What changed between two versions of a dataset (pure): the pairs added, removed and flipped, the rows whose
values moved, the policy keys that changed, and in words why two versions differ when their pairs do not."""

from __future__ import annotations

import json
from collections import Counter
from statistics import fmean
from typing import Any

from tasks.curate.exports import EXPORT_POLICY_KEYS


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "rows": len(rows),
        "mean_margin": round(fmean(r["margin"] for r in rows), 4) if rows else None,
        "mean_confidence": round(fmean(r["confidence"] for r in rows), 4) if rows else None,
        "by_source": dict(sorted(Counter(r["source"] for r in rows).items())),
        "by_split": dict(sorted(Counter(r["split"] for r in rows).items())),
    }


# Policy keys that change the published files but not which pairs a version holds (`select.content_hash`).
EXPORT_KEYS = EXPORT_POLICY_KEYS
# Row values besides the chosen side that a version stores (the texts come with the pair).
_VALUES = ("margin", "confidence", "p_correct", "split", "human_agrees")


def policy_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[Any]]:
    """Each policy key whose value differs: key -> [old, new] (a key one policy lacks reads as None)."""
    return {k: [old.get(k), new.get(k)] for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)}


def changes_text(changes: dict[str, list[Any]]) -> str:
    """`min_abs_margin 1.0 -> 0.5, rm_margin_column false -> true`: values as the policy's TOML writes them."""
    return ", ".join(f"{k} {json.dumps(old)} -> {json.dumps(new)}" for k, (old, new) in changes.items())


def _explain(result: dict[str, Any], same_hash: bool | None) -> str | None:
    """Why two versions with the same pairs on the same sides still differ (None when their pairs differ)."""
    if result["added"] or result["removed"] or result["flipped"]:
        return None
    exports = {k: v for k, v in result["policy_changes"].items() if k in EXPORT_KEYS}
    if exports:
        return "same pairs on the same sides; the exports differ: " + changes_text(exports)
    if result["changed"]:
        return f"same pairs on the same sides; {len(result['changed'])} rows' values moved (margin, confidence, " \
               "p_correct, split or human agreement)"
    if result["judge_config"]:
        return "same rows, judged under another judge configuration"
    return "identical content" if same_hash in (True, None) else "same rows; the content hashes differ"


def diff_versions(old: list[dict[str, Any]], new: list[dict[str, Any]], old_meta: dict[str, Any] | None = None,
                  new_meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Pairs added, removed and flipped (the judge now prefers the other response), rows whose values moved,
    moved statistics, and (given the versions' records) the policy keys and judge configuration that changed."""
    a = {r["pair_id"]: r for r in old}
    b = {r["pair_id"]: r for r in new}
    both = a.keys() & b.keys()
    flipped = sorted(p for p in both if a[p]["chosen_side"] != b[p]["chosen_side"])
    old_meta, new_meta = old_meta or {}, new_meta or {}
    result = {
        "added": sorted(b.keys() - a.keys()),
        "removed": sorted(a.keys() - b.keys()),
        "flipped": flipped,
        "changed": sorted(p for p in both - set(flipped) if any(a[p].get(k) != b[p].get(k) for k in _VALUES)),
        "before": _stats(old),
        "after": _stats(new),
        "policy_changes": policy_changes(old_meta.get("policy") or {}, new_meta.get("policy") or {}),
        "judge_config": ([old_meta.get("judge_config_id"), new_meta.get("judge_config_id")]
                         if old_meta.get("judge_config_id") != new_meta.get("judge_config_id") else None),
    }
    same_hash = old_meta.get("content_hash") == new_meta.get("content_hash") if old_meta and new_meta else None
    result["note"] = _explain(result, same_hash)
    return result
