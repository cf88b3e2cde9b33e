"""How numbers read, the same on every surface (the card, the CLI's tables, the dashboard): counts as integers
with thousands separated, shares as percentages with one decimal, rates without exponents."""

from __future__ import annotations

import math
from typing import Any


def plain(value: Any) -> Any:
    """A numpy scalar (or array) as the Python value it holds: no `np.float64(...)` reaches an output."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        try:
            return value.item()
        except ValueError:  # an array of several values
            return value.tolist()
    return value


def count(n: Any) -> str:
    """2114 -> '2,114'; None -> '-'."""
    n = plain(n)
    return "-" if n is None or (isinstance(n, float) and math.isnan(n)) else f"{int(round(n)):,}"


def percent(share: Any, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage: 0.86394 -> '86.4%'; None -> '-'."""
    share = plain(share)
    return "-" if share is None or (isinstance(share, float) and math.isnan(share)) else f"{100 * share:.{digits}f}%"


def rate(x: Any) -> str:
    """A rate or measure without exponents: 439812.3 -> '439,812', 12.345 -> '12.3', 0.01234 -> '0.0123'."""
    x = plain(x)
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:,.1f}"
    return f"{x:.3g}"


def significant(x: float, digits: int = 6) -> float:
    """`x` to `digits` significant digits: a small figure (a budget's GPU-hours on a short run) keeps its size where
    rounding to decimals would make it 0."""
    return float(f"{x:.{digits}g}")


def jsonable(value: Any) -> Any:
    """`json.dumps(..., default=jsonable)`: numpy scalars as numbers, anything else as its text."""
    value = plain(value)
    return value if isinstance(value, (int, float, str, bool, list)) else str(value)
