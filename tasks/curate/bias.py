"""The biases of a preference set, and the policy's controls on them (pure functions).

For a set of (chosen, rejected) answers: how often the chosen one is the longer (and the length ratio's
quantiles), how often it carries more markdown (headers, list items, bold), how often it was shown first
(response A), and, for arena-style rows, each model family's win rate. Reported for the pool a version is
drawn from and for the version itself, so a filter's effect on them is visible.

Controls: `max_chosen_longer_share` (and the same for markdown) drop the least confident pairs of the
over-represented side until the share holds.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, NamedTuple

_MARKDOWN = re.compile(r"^\s{0,3}#{1,6}\s|^\s*(?:[-*+]|\d+[.)])\s|\*\*[^*\n]+\*\*|__[^_\n]+__", re.MULTILINE)
TOP_FAMILIES = 12


class Preference(NamedTuple):
    """One chosen/rejected pair as the audit sees it (a tuple: a million are made per version)."""

    chosen: str
    rejected: str
    chosen_side: str  # "a" | "b"
    chosen_model: str | None = None
    rejected_model: str | None = None


@lru_cache(maxsize=1 << 20)  # the pool and the version audit the same answers
def markdown_marks(text: str) -> int:
    """Headers, list items and bold spans in a text."""
    return sum(1 for _ in _MARKDOWN.finditer(text))


def chosen_longer(p: Preference) -> bool:
    return len(p.chosen) > len(p.rejected)


def chosen_more_markdown(p: Preference) -> bool:
    return markdown_marks(p.chosen) > markdown_marks(p.rejected)


def model_family(model: str | None) -> str | None:
    """'gpt-4o-2024-08-06' -> 'gpt', 'claude-3-5-sonnet' -> 'claude', 'Llama-3.1-70B' -> 'llama'."""
    if not model:
        return None
    head = re.split(r"[-_./:\s\d]", model.strip().lower(), maxsplit=1)[0]
    return head or model.strip().lower()


def _quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    s = sorted(values)

    def q(x: float) -> float:
        return round(s[min(len(s) - 1, int(x * len(s)))], 3)

    return {"p10": q(0.10), "p50": q(0.50), "p90": q(0.90)}


def audit(prefs: list[Preference]) -> dict[str, Any]:
    """The bias table of one set."""
    n = len(prefs)

    def share(flag) -> float | None:
        return round(sum(flag(p) for p in prefs) / n, 4) if n else None

    wins: Counter = Counter()
    games: Counter = Counter()
    for p in prefs:
        chosen, rejected = model_family(p.chosen_model), model_family(p.rejected_model)
        if chosen is None or rejected is None or chosen == rejected:
            continue  # a family against itself says nothing of its win rate
        wins[chosen] += 1
        games[chosen] += 1
        games[rejected] += 1
    families = {f: {"pairs": g, "wins": wins[f], "win_rate": round(wins[f] / g, 4)}
                for f, g in games.most_common(TOP_FAMILIES)}
    return {
        "pairs": n,
        "chosen_longer_share": share(chosen_longer),
        "length_ratio": _quantiles([len(p.chosen) / max(len(p.rejected), 1) for p in prefs]),
        "chosen_more_markdown_share": share(chosen_more_markdown),
        "equal_markdown_share": share(lambda p: markdown_marks(p.chosen) == markdown_marks(p.rejected)),
        "chosen_first_share": share(lambda p: p.chosen_side == "a"),
        "model_families": families,
    }


def hold_share(items: list[Any], flag, max_share: float, confidence) -> tuple[list[Any], int]:
    """Drop the least confident items with `flag` set until their share is at most `max_share`; returns
    (the survivors in their original order, how many were dropped). Ties in confidence fall by position,
    so the choice is reproducible."""
    flagged = [i for i, item in enumerate(items) if flag(item)]
    n, k = len(items), len(flagged)
    if n == 0 or k <= max_share * n:
        return items, 0
    # (k - d) / (n - d) <= s  <=>  d >= (k - s n) / (1 - s)
    need = k if max_share <= 0 else min(k, -(-(k - max_share * n) // (1 - max_share)))
    need = int(need)
    while need < k and (k - need) > max_share * (n - need) + 1e-9:
        need += 1
    weakest = sorted(flagged, key=lambda i: (confidence(items[i]), i))[:need]
    gone = set(weakest)
    return [item for i, item in enumerate(items) if i not in gone], need
