"""Judge kinds by name. A judge configuration names its
kind (`JudgeConfig.kind`); the dispatcher asks and reads a judgment through it (`protocol.JudgeKind`).

A new kind is a module here with one class and its line in `KINDS`.
"""

from __future__ import annotations

from tasks.judge.kinds.genrm import GENRM
from tasks.judge.kinds.protocol import JudgeKind, Reading

__all__ = ["GENRM", "KINDS", "JudgeKind", "Reading", "kind_of"]

KINDS: dict[str, JudgeKind] = {
    "genrm": GENRM,
}


def kind_of(name: str) -> JudgeKind:
    """The kind `name` names (`genrm`)."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown judge kind {name!r}: one of {', '.join(KINDS)}") from None
