"""Element predicates shared by the raw and canonical schemas. Each is a plain function of one value."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from common.reasons import ValueFault

ROLES = ("user", "assistant")


def is_str(v: Any) -> bool:
    return isinstance(v, str)


def is_str_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


def is_int_like(v: Any) -> bool:
    """An int, or an integral float (JSON readers widen a column to float when one row has a fraction)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v) and v.is_integer()


def finite_number(v: Any) -> float | None:
    """A JSON number as a finite float; None for a bool, a value that is no number, NaN, an infinity, or an integer
    past a float's range (10**400: JSON allows it, `float()` overflows on it)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def is_valid_utf8(v: Any) -> bool:
    """True when a string encodes to UTF-8: a lone surrogate (from a JSON `\\ud800` escape) does not."""
    if not isinstance(v, str) or v.isascii():  # isascii() reads a flag: no copy of an ASCII text
        return True
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_message_list(v: Any) -> bool:
    """A list of {role: str, content: str} dicts (HelpSteer3's `context`)."""
    return isinstance(v, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in v
    )


def is_part_message_list(v: Any) -> bool:
    """A list of {role: str, content: list of part dicts} (arena-140k's conversation_a/b)."""
    return isinstance(v, list) and all(
        isinstance(m, dict)
        and isinstance(m.get("role"), str)
        and isinstance(m.get("content"), list)
        and all(isinstance(p, dict) for p in m["content"])
        for m in v
    )


def history_not_empty(h: Any) -> bool:
    return isinstance(h, list) and len(h) > 0


def history_ends_with_user(h: Any) -> bool:
    return isinstance(h, list) and len(h) > 0 and isinstance(h[-1], dict) and h[-1].get("role") == "user"


def history_roles_allowed(h: Any) -> bool:
    """user/assistant turns, with at most one system message, and only in front."""
    if not isinstance(h, list):
        return False
    for i, m in enumerate(h):
        role = m.get("role") if isinstance(m, dict) else None
        if role in ROLES or (role == "system" and i == 0):
            continue
        return False
    return True


def history_last_turn_not_empty(h: Any) -> bool:
    return isinstance(h, list) and len(h) > 0 and isinstance(h[-1], dict) and bool(visible_text(str(h[-1].get("content") or "")))


def text_not_empty(v: Any) -> bool:
    return isinstance(v, str) and bool(visible_text(v))


# Nesting deeper than this is no preference row: real rows nest 5 levels at most, and deeper values
# would overflow the JSON writers that store them.
MAX_DEPTH = 64
# Characters a reader cannot see: an answer made only of these (and white space) is empty.
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\x00\u00ad"
_INVISIBLE_TABLE = str.maketrans("", "", INVISIBLE)


def visible_text(v: str) -> str:
    """The text without zero-width characters, BOMs and NULs, and without outer white space."""
    return v.translate(_INVISIBLE_TABLE).strip() if not v.isascii() or "\x00" in v else v.strip()


def value_faults(row: dict[str, Any], deep: bool = True, finite_checked_elsewhere: Collection[str] = ()) -> list[str]:
    """Faults of any value in a raw row, named by the top-level field that holds it:
    `invalid_utf8:<field>` (a lone surrogate), `not_finite:<field>` (NaN or infinity), `json_too_deep`.

    `deep` walks every nested value, iteratively (a deep row must not overflow the stack); without it
    only the top-level values are looked at, for rows a strict parser already vouched for (orjson and
    Arrow refuse lone surrogates, NaN literals and absurd nesting). NaN or infinity under a field of
    `finite_checked_elsewhere` is no fault here: the source's adapter judges it part by part.
    """
    faults: list[str] = []
    for field_name, top in row.items():
        if not isinstance(field_name, str) or not is_valid_utf8(field_name):
            faults.append(ValueFault.INVALID_UTF8.of("<key>"))
            continue
        stack = [(top, 1)]
        bad_utf8 = bad_number = False
        while stack:
            v, depth = stack.pop()
            if isinstance(v, str):
                bad_utf8 = bad_utf8 or (not v.isascii() and not is_valid_utf8(v))
            elif isinstance(v, float):
                bad_number = bad_number or not math.isfinite(v)
            elif deep and isinstance(v, dict | list | tuple):
                if depth > MAX_DEPTH:
                    return [ValueFault.JSON_TOO_DEEP]
                if isinstance(v, dict):
                    bad_utf8 = bad_utf8 or not all(isinstance(k, str) and is_valid_utf8(k) for k in v)
                    v = v.values()
                stack.extend((c, depth + 1) for c in v)
        if bad_utf8:
            faults.append(ValueFault.INVALID_UTF8.of(field_name))
        if bad_number and field_name not in finite_checked_elsewhere:
            faults.append(ValueFault.NOT_FINITE.of(field_name))
    return faults
