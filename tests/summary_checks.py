"""A flow's summary against the type it declares: every key declared, every value of its declared type (the same
check the judge exchange holds a worker's run record to), the required keys present."""

from __future__ import annotations

import json
from typing import Any

from tasks.judge.exchange_checks import type_problem


def assert_summary(summary: Any, kind: type) -> None:
    """`summary` is a `kind` as `--json` prints it (through JSON, as a reader gets it)."""
    problem = type_problem(json.loads(json.dumps(summary, default=str)), kind)
    assert problem is None, f"not a {kind.__name__}: {problem}"
