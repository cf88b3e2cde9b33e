"""Building blocks of the raw-row pandera schemas: each source declares its own schema in its module
(`tasks/ingest/sources/`), checked before its adapter maps a row.

Columns are `object`: a raw row may hold anything, and each failing element names its column and check
(the quarantine reason), instead of one dtype error for the whole column.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandera.pandas as pa

from common.reasons import SchemaCheck
from schemas import checks as c


def element_check(fn: Callable[[Any], bool], name: str) -> pa.Check:
    """A check of each value on its own; `name` is the quarantine reason's suffix (`<column>:<name>`)."""
    return pa.Check(fn, element_wise=True, name=name)


def text_column(nullable: bool = False) -> pa.Column:
    if nullable:
        return pa.Column(None, element_check(c.is_str_or_none, SchemaCheck.IS_TEXT), nullable=True)
    return pa.Column(None, element_check(c.is_str, SchemaCheck.IS_TEXT))
