"""Element predicates shared by the raw and canonical schemas. Each is a plain function of one value."""

from __future__ import annotations

import math
from typing import Any

ROLES = ("user", "assistant")


def is_str(v: Any) -> bool:
    return isinstance(v, str)


def is_str_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str) or (isinstance(v, float) and math.isnan(v))


def is_int_like(v: Any) -> bool:
    """An int, or an integral float (JSON readers widen a column to float when one row has a fraction)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v) and v.is_integer()


def is_valid_utf8(v: Any) -> bool:
    """True when a string encodes to UTF-8: a lone surrogate (from a JSON `\\ud800` escape) does not."""
    if not isinstance(v, str):
        return True
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def messages_valid_utf8(messages: Any) -> bool:
    if not isinstance(messages, list):
        return True
    return all(is_valid_utf8(m.get("content")) for m in messages if isinstance(m, dict))


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
    return isinstance(h, list) and len(h) > 0 and isinstance(h[-1], dict) and bool(str(h[-1].get("content") or "").strip())


def text_not_empty(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip())
