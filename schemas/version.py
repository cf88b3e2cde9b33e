"""A dataset version's vocabulary: what its name may be (it becomes a folder and a Hub repo name)."""

from __future__ import annotations

import re

from common.errors import InvalidInputError

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def check_name(name: str) -> str:
    """A dataset name safe as a folder and a Hub repo name: no path traversal, no spaces."""
    if not NAME_PATTERN.fullmatch(name) or ".." in name:
        raise InvalidInputError(f"invalid dataset name {name!r}: use letters, digits, '.', '_' or '-' (at most 96)")
    return name
