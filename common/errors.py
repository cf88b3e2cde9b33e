"""The errors a user can act on. The CLI prints such an error as one line and exits with code 2; any other
exception is a bug and keeps its traceback."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

M = TypeVar("M")


# Characters a terminal acts on or hides rather than shows: C0 and C1 controls (newlines, ANSI escape sequences),
# DEL, the line and paragraph separators, bidirectional overrides and isolates; then zero-width characters and BOMs.
_CONTROLS = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
CONTROL = re.compile(f"[{_CONTROLS}]")
_UNSHOWN = re.compile(f"[{_CONTROLS}\u200b-\u200f\u2060\ufeff]")


def shown(text: str) -> str:
    """`text` as one line a terminal shows as it is: each control, escape, separator, direction override or
    zero-width character written as its escape (`\\n`, `\\x1b`, `\\u200b`), every other character kept."""
    return _UNSHOWN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class UserError(Exception):
    """Something the user can fix: a wrong input, a busy or unreadable file, a server that is down."""

    hint: str | None = None  # one optional line saying what to do next


class InvalidInputError(UserError, ValueError):
    """A parameter, a name or a file's content that the command cannot take."""


class NotFoundError(UserError, FileNotFoundError):
    """Something the command needs is not where it was said to be."""


def choices(names: Iterable[str]) -> str:
    """Names as a refusal lists what it would take: `a, b or c`."""
    names = list(names)
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)


def allowed_range(model: type, field: str) -> str | None:
    """A pydantic model field's numeric bounds in words, as flags' help and errors print them (`0 .. 2.5`, `>= 1`,
    `0 < x <= 1`); None when the field has none."""
    info = getattr(model, "model_fields", {}).get(field)
    found = {k: getattr(m, k) for m in (info.metadata if info else []) for k in ("ge", "gt", "le", "lt")
             if getattr(m, k, None) is not None}
    low = [(op, found[k]) for k, op in (("ge", "<="), ("gt", "<")) if k in found][:1]
    high = [(op, found[k]) for k, op in (("le", "<="), ("lt", "<")) if k in found][:1]

    def number(v: float) -> str:
        return str(int(v)) if float(v).is_integer() else str(v)

    if low and high:
        (low_op, lo), (high_op, hi) = low[0], high[0]
        if low_op == high_op == "<=":
            return f"{number(lo)} .. {number(hi)}"
        return f"{number(lo)} {low_op} x {high_op} {number(hi)}"
    if low:
        return f"{'>=' if low[0][0] == '<=' else '>'} {number(low[0][1])}"
    if high:
        return f"{high[0][0]} {number(high[0][1])}"
    return None


def explain(err: Exception, model: type, label: Callable[[str], str] | None = None) -> str:
    """A pydantic ValidationError of `model` in words: each value named with what it was, what is wrong with it
    and the field's allowed range (`judge_max_in_flight = 0: input should be greater than or equal to 1 (allowed:
    >= 1)`). `label` names a field as its user knows it (an environment variable, say)."""
    parts = []
    for e in err.errors():  # type: ignore[attr-defined]
        field = str(e["loc"][0]) if e["loc"] else ""
        name = ".".join([(label or str)(field), *(str(x) for x in e["loc"][1:])]) if field else "value"
        if e["type"] == "extra_forbidden":
            parts.append(f"unknown key {name!r}")
            continue
        allowed = allowed_range(model, field)
        msg = e["msg"].removeprefix("Value error, ")  # a validator's own sentence, as it wrote it
        msg = msg[:1].lower() + msg[1:]
        if not field and e["type"] == "value_error":  # a check of several values together: its sentence alone
            parts.append(msg)
            continue
        parts.append(f"{name} = {e.get('input')!r}: {msg}" + (f" (allowed: {allowed})" if allowed else ""))
    return "; ".join(parts)


def validated(model: type[M], values: dict[str, Any], what: str, error: type[UserError] = InvalidInputError,
              label: Callable[[str], str] | None = None) -> M:
    """`model` built from `values` under its own field constraints; else `error`, one line: `{what}: {explain}`."""
    from pydantic import ValidationError

    try:
        return model.model_validate(values)  # type: ignore[attr-defined]
    except ValidationError as err:
        raise error(f"{what}: {explain(err, model, label)}") from None
