"""How often reviewers agree with the judge, with a confidence interval.

Agreement is counted over the reviewed pairs whose outcome picks a side (A or B) and where the judge picks one
too; ties, both-bad, splits and judge ties are counted apart, never as agreement or disagreement. On the audit
sample (a uniform sample of a version) it estimates the judge's accuracy on its own data; on borderline or
disagreement pairs it describes those pairs only. The interval is Wilson's score interval (95% by default),
which stays inside [0, 1] and behaves at small n and at rates near 0 or 1.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from common.numbers import count, percent
from tasks.review.majority import CODES

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson's score interval for k successes in n trials; None when n is 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def agreement_text(agree: int, decided: int) -> str:
    """'85.0% (72.1% – 92.3%) of 40', or '-' with nothing to compare (the dashboard and `curate status`)."""
    interval = wilson(int(agree), int(decided))
    if interval is None:
        return "-"
    return f"{percent(agree / decided)} ({percent(interval[0])} – {percent(interval[1])}) of {count(decided)}"


def agreement(judge: np.ndarray, outcome: np.ndarray) -> dict[str, Any]:
    """`judge`: the judge's direction per reviewed pair (1 A, -1 B, 0 tie or none); `outcome`: the reviewers'
    (`tasks.review.majority.CODES`). Counts, the agreement rate and its 95% interval."""
    decided = np.isin(outcome, (CODES["a"], CODES["b"])) & (judge != 0)
    compared = int(decided.sum())
    agree = int(((outcome == judge) & decided).sum())
    interval = wilson(agree, compared)
    return {
        "reviewed": int(len(outcome)), "compared": compared, "judge_agrees": agree,
        "agreement": round(agree / compared, 4) if compared else None,
        "ci95": [round(interval[0], 4), round(interval[1], 4)] if interval else None,
        "reviewed_tie": int((outcome == CODES["tie"]).sum()),
        "reviewed_both_bad": int((outcome == CODES["both_bad"]).sum()), "split": int((outcome == CODES["split"]).sum()),
        "judge_tie": int((np.isin(outcome, (CODES["a"], CODES["b"])) & (judge == 0)).sum()),
    }
