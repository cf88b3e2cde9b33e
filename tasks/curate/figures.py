"""The figures of a version that every surface shows (the card, the dashboard, `curate status`, the JSON
outputs), each defined once, here (pure functions over the pool's columns). The surfaces read them from the
version's stored statistics and never count again.

- pairs judged: pairs of the version's pool (not near duplicates) with at least one verdict of its judge
  configuration. This is the judged pool the version is drawn from; the bias audit and the agreement of the
  pool are over these pairs.
- not judged: the pool's other pairs (contaminated pairs are kept out of judging), counted apart and never
  among the dropped.
- pairs kept: the rows of the version; pairs judged = pairs kept + every dropped pair (by reason).
- agreement with human labels: over the pairs whose human label prefers a side (neither a tie nor both-bad)
  and whose judge prefers a side: agree / (agree + disagree). Human ties, both-bad votes and judge ties are
  reported apart, never counted as disagreement.
- token lengths: prompt, chosen and rejected of the kept rows, and the `max_length` that keeps 95% / 99% of
  the rows whole (a row's longer conversation: its prompt with the chosen or the rejected answer).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa

from common.reasons import Dropped

LENGTH_QUANTILES = (0.5, 0.9, 0.99)
KEEP_SHARES = (0.95, 0.99)


def human_agreement(human_label: np.ndarray, both_bad: np.ndarray, direction: np.ndarray) -> dict[str, Any]:
    """Agreement of the judge's direction (1 A, -1 B, 0 tie) with the human label (NaN: none) of a set of pairs."""
    labelled = ~np.isnan(human_label)
    bad = labelled & both_bad
    tie = labelled & ~both_bad & (human_label == 0)
    sided = labelled & ~both_bad & (human_label != 0)
    judge_tie = sided & (direction == 0)
    comparable = sided & (direction != 0)
    agree = comparable & (np.sign(np.nan_to_num(human_label)) == direction)
    n_comparable, n_agree = int(comparable.sum()), int(agree.sum())
    return {
        "labelled": int(labelled.sum()),
        "comparable": n_comparable,
        "agree": n_agree,
        "disagree": n_comparable - n_agree,
        "human_ties": int(tie.sum()),
        "both_bad": int(bad.sum()),
        "judge_ties": int(judge_tie.sum()),
        "rate": round(n_agree / n_comparable, 4) if n_comparable else None,
    }


def version_figures(verdicts: np.ndarray, direction: np.ndarray, contaminated: np.ndarray, human_label: np.ndarray,
                    both_bad: np.ndarray, kept: np.ndarray, dropped: Counter) -> dict[str, Any]:
    """The counts of a version over its pool (arrays aligned with the pool; `kept`: pool indices of its rows;
    `dropped`: the selection's reasons, `not_judged` among them)."""
    judged = verdicts > 0
    return {
        "pairs_judged": int(judged.sum()),
        "pairs_kept": int(len(kept)),
        "not_judged": {"pairs": int((~judged).sum()), "contaminated": int((~judged & contaminated).sum())},
        "dropped": {k: int(v) for k, v in dropped.most_common() if k != Dropped.NOT_JUDGED},
        "human_agreement": {
            "pool": human_agreement(human_label[judged], both_bad[judged], direction[judged]),
            "kept": human_agreement(human_label[kept], both_bad[kept], direction[kept]),
        },
    }


def _quantile(sorted_values: np.ndarray, q: float) -> int:
    """The smallest value at or below which at least a share `q` of the values lie."""
    return int(sorted_values[max(0, int(np.ceil(q * len(sorted_values))) - 1)])


def _distribution(values: np.ndarray) -> dict[str, int]:
    s = np.sort(values)
    return {**{f"p{round(q * 100)}": _quantile(s, q) for q in LENGTH_QUANTILES}, "max": int(s[-1])}


def token_lengths(prompt: np.ndarray, chosen: np.ndarray, rejected: np.ndarray, counted_by: str) -> dict[str, Any]:
    """Token counts of the kept rows (one entry per row, chat-template tokens included), their p50 / p90 / p99,
    and the max_length that keeps each share of the rows whole (TRL drops or cuts a longer row)."""
    if not len(prompt):
        return {"rows": 0, "counted_by": counted_by}
    longer = np.sort(prompt + np.maximum(chosen, rejected))
    return {
        "rows": int(len(prompt)),
        "counted_by": counted_by,
        "prompt": _distribution(prompt),
        "chosen": _distribution(chosen),
        "rejected": _distribution(rejected),
        "prompt_and_longer_answer": _distribution(longer),
        "max_length_keeping": {f"{round(share * 100)}%": _quantile(longer, share) for share in KEEP_SHARES},
    }


def estimated_lengths(tokens: pa.Table) -> dict[str, Any]:
    """`token_lengths` of the ingest's estimates (`wh.versions.token_estimates`: each row's prompt, chosen and
    rejected tokens, chat-template tokens included)."""
    def col(name: str) -> np.ndarray:
        return tokens.column(name).to_numpy().astype(np.int64)

    return token_lengths(col("prompt"), col("chosen"), col("rejected"), "estimate")


def size_category(rows: int) -> str:
    """The Hub's `size_categories` value for a row count."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                        (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")):
        if rows < limit:
            return name
    return "n>1T" if rows > 10**12 else "1B<n<10B" if rows < 10**10 else "10B<n<100B" if rows < 10**11 else "100B<n<1T"
