"""Judge kinds by name: the GenRM and a sequence-classification reward model. A judge configuration names its
kind (`JudgeConfig.kind`); the dispatcher asks and reads a judgment through it (`protocol.JudgeKind`).

A new kind is a module here with one class and its line in `KINDS`.
"""

from __future__ import annotations

from tasks.judge.kinds.genrm import GENRM
from tasks.judge.kinds.protocol import JudgeKind, Reading
from tasks.judge.kinds.reward_model import NO_ORDER, REWARD_MODEL

__all__ = ["GENRM", "KINDS", "NO_ORDER", "REWARD_MODEL", "JudgeKind", "Reading", "kind_of"]

KINDS: dict[str, JudgeKind] = {
    "genrm": GENRM,
    "reward_model": REWARD_MODEL,
}


def kind_of(name: str) -> JudgeKind:
    """The kind `name` names (`genrm`, `reward_model`)."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown judge kind {name!r}: one of {', '.join(KINDS)}") from None
