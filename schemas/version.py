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


HF_PREFIX = "hf://"


def hub_repo(target: str) -> str | None:
    """The Hub repo `ORG/NAME` of a publish target `hf://ORG/NAME` (both parts valid names); None for a folder."""
    if not target.startswith(HF_PREFIX):
        return None
    repo_id = target[len(HF_PREFIX):].strip("/")
    org, slash, name = repo_id.partition("/")
    if not slash or not org or not name or "/" in name:
        raise InvalidInputError(f"{target}: a Hub target is hf://ORG/NAME (a user or organisation, then the dataset)")
    for part, what in ((org, "user or organisation"), (name, "dataset")):
        if not NAME_PATTERN.fullmatch(part) or ".." in part:
            raise InvalidInputError(f"{target}: invalid Hub {what} name {part!r}: use letters, digits, '.', '_' or '-'")
    return repo_id
