"""What a judge run's failures come to, in one line: pure functions over its summary."""

from __future__ import annotations

from typing import Any

ERROR_CHARS = 160  # of the first error text, in the line


def failure_line(summary: dict[str, Any]) -> tuple[str | None, bool]:
    """(a line saying how many judgments failed and why, or None when none did; whether every judgment this run
    asked for failed). Judgments answered from the cache are not this run's: they count for neither."""
    failed: dict[str, int] = summary.get("failed") or {}
    total = sum(failed.values())
    if not total:
        return None, False
    judged = summary.get("judged", 0)
    reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(failed.items(), key=lambda kv: (-kv[1], kv[0])))
    if judged:
        return f"{total} failed ({reasons})", False
    top, count = max(failed.items(), key=lambda kv: (kv[1], kv[0]))
    first = " ".join(((summary.get("first_errors") or {}).get(top) or "").split())
    if len(first) > ERROR_CHARS:
        first = first[:ERROR_CHARS - 3] + "..."
    return (f"every judgment of this run failed ({total}): {count} {top}" + (f", first error: {first}" if first else "")
            + (f"; others: {reasons}" if len(failed) > 1 else "")), True
