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
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

_MARKDOWN = re.compile(r"^\s{0,3}#{1,6}\s|^\s*(?:[-*+]|\d+[.)])\s|\*\*[^*\n]+\*\*|__[^_\n]+__", re.MULTILINE)
# The same pattern for RE2 (DuckDB's regexp_extract_all, which counts marks where the texts are): Python's
# `\s` and `\d` on str are Unicode classes, spelled out here (tested against `markdown_marks`).
_SPACE = r"[\t-\r\x{1c}-\x{1f}\x{85}\pZ]"
MARKDOWN_RE2 = (rf"(?m)^{_SPACE}{{0,3}}#{{1,6}}{_SPACE}|^{_SPACE}*(?:[-*+]|\p{{Nd}}+[.)]){_SPACE}"
                r"|\*\*[^*\n]+\*\*|__[^_\n]+__")
TOP_FAMILIES = 12


class Preferences(NamedTuple):
    """A set of chosen/rejected pairs as the audit sees it: arrays of equal length (a million per version)."""

    chosen_len: np.ndarray  # characters
    rejected_len: np.ndarray
    chosen_md: np.ndarray  # markdown marks
    rejected_md: np.ndarray
    chosen_first: np.ndarray  # bool: the chosen answer was response A
    chosen_model: np.ndarray  # object: str | None
    rejected_model: np.ndarray

    @classmethod
    def of(cls, items: list[tuple[str, str, str, str | None, str | None]]) -> Preferences:
        """From (chosen, rejected, chosen side, chosen model, rejected model) tuples."""
        models = np.empty((len(items), 2), dtype=object)
        models[:] = [(m1, m2) for *_, m1, m2 in items] or np.empty((0, 2), dtype=object)
        return cls(np.array([len(i[0]) for i in items], np.int64), np.array([len(i[1]) for i in items], np.int64),
                   np.array([markdown_marks(i[0]) for i in items], np.int64),
                   np.array([markdown_marks(i[1]) for i in items], np.int64),
                   np.array([i[2] == "a" for i in items], bool), models[:, 0], models[:, 1])


def markdown_marks(text: str) -> int:
    """Headers, list items and bold spans in a text."""
    return sum(1 for _ in _MARKDOWN.finditer(text))


def model_family(model: str | None) -> str | None:
    """'gpt-4o-2024-08-06' -> 'gpt', 'claude-3-5-sonnet' -> 'claude', 'Llama-3.1-70B' -> 'llama'."""
    if not model:
        return None
    head = re.split(r"[-_./:\s\d]", model.strip().lower(), maxsplit=1)[0]
    return head or model.strip().lower()


def _quantiles(values: np.ndarray) -> dict[str, float] | None:
    if not len(values):
        return None
    s = np.sort(values)

    def q(x: float) -> float:
        return round(float(s[min(len(s) - 1, int(x * len(s)))]), 3)

    return {"p10": q(0.10), "p50": q(0.50), "p90": q(0.90)}


def family_win_rates(chosen_model: np.ndarray, rejected_model: np.ndarray) -> dict[str, dict[str, Any]]:
    """Each model family's games and wins, most games first (a family against itself is not a game)."""
    if not len(chosen_model):
        return {}
    codes, models = pd.factorize(np.concatenate([chosen_model, rejected_model]), use_na_sentinel=True)
    families = np.array([model_family(m) for m in models] + [None], dtype=object)  # code -1 (no model): None
    fam_codes, fam_names = pd.factorize(families[codes], use_na_sentinel=True)
    chosen, rejected = np.split(fam_codes, 2)
    game = (chosen >= 0) & (rejected >= 0) & (chosen != rejected)
    k = len(fam_names)
    wins = np.bincount(chosen[game], minlength=k)
    games = wins + np.bincount(rejected[game], minlength=k)
    top = sorted((f for f in range(k) if games[f]), key=lambda f: (-games[f], fam_names[f]))[:TOP_FAMILIES]
    return {fam_names[f]: {"pairs": int(games[f]), "wins": int(wins[f]), "win_rate": round(float(wins[f] / games[f]), 4)}
            for f in top}


def audit(p: Preferences) -> dict[str, Any]:
    """The bias table of one set."""
    n = len(p.chosen_len)

    def share(flags: np.ndarray) -> float | None:
        return round(float(flags.sum()) / n, 4) if n else None

    return {
        "pairs": n,
        "chosen_longer_share": share(p.chosen_len > p.rejected_len),
        "length_ratio": _quantiles(p.chosen_len / np.maximum(p.rejected_len, 1)),
        "chosen_more_markdown_share": share(p.chosen_md > p.rejected_md),
        "equal_markdown_share": share(p.chosen_md == p.rejected_md),
        "chosen_first_share": share(p.chosen_first),
        "model_families": family_win_rates(p.chosen_model, p.rejected_model),
    }


def hold_share(flagged: np.ndarray, max_share: float, confidence: np.ndarray) -> np.ndarray:
    """Which items survive (a bool mask) when the least confident `flagged` items are dropped until their share
    is at most `max_share`. Ties in confidence fall by position, so the choice is reproducible."""
    n, k = len(flagged), int(flagged.sum())
    keep = np.ones(n, bool)
    if n == 0 or k <= max_share * n:
        return keep
    # (k - d) / (n - d) <= s  <=>  d >= (k - s n) / (1 - s)
    need = k if max_share <= 0 else min(k, -(-(k - max_share * n) // (1 - max_share)))
    need = int(need)
    while need < k and (k - need) > max_share * (n - need) + 1e-9:
        need += 1
    positions = np.flatnonzero(flagged)
    weakest = positions[np.lexsort((positions, confidence[positions]))[:need]]
    keep[weakest] = False
    return keep
