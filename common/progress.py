"""A progress hook the CLI sets and flows call: a bar on a terminal, nothing under a deployment."""

from __future__ import annotations

from collections.abc import Callable

_reporter: Callable[[int, int | None, str], None] | None = None


def set_reporter(fn: Callable[[int, int | None, str], None] | None) -> None:
    global _reporter
    _reporter = fn


def report(advance: int, total: int | None = None, label: str = "") -> None:
    if _reporter is not None:
        _reporter(advance, total, label)
