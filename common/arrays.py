"""Small numpy helpers shared by the layers."""

from __future__ import annotations

import numpy as np


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D array, sorted: np.unique's result, by a sort. numpy 2's np.unique hashes
    integers first and measured 10-40x slower than this on 100-160,000 of them."""
    out = np.sort(values)
    if len(out) < 2:
        return out
    keep = np.empty(len(out), dtype=bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]
