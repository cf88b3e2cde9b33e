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
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def hub_repo(target: str) -> str | None:
    """The Hub repo `ORG/NAME` of a publish target `hf://ORG/NAME` (the scheme in any case: `HF://` too);
    None for a local folder. Another `scheme://` is refused, and so is a name the Hub would refuse, by
    huggingface_hub's own validator (no `--` or `..`, no `-` or `.` first or last, at most 96 characters...)."""
    scheme = _SCHEME.match(target)
    if scheme is None:
        if target[:3].lower() == "hf:":  # `hf:/org/x`, `hf:org/x`: a Hub target mistyped, not a folder named so
            raise InvalidInputError(f"{target}: a Hub target is hf://ORG/NAME (two slashes)")
        return None
    if scheme.group(1).lower() != "hf":
        raise InvalidInputError(f"{target}: cannot publish to {scheme.group(0)}: the targets are a local folder "
                                "or hf://ORG/NAME")
    repo_id = target[scheme.end():].strip("/")
    org, slash, name = repo_id.partition("/")
    if not slash or not org or not name or "/" in name:
        raise InvalidInputError(f"{target}: a Hub target is hf://ORG/NAME (a user or organisation, then the dataset)")
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    for part, what in ((org, "user or organisation"), (name, "dataset")):
        try:
            validate_repo_id(part)
        except HFValidationError as err:
            why = str(err).removesuffix(f": '{part}'.")  # the validator's sentence, without the name again
            raise InvalidInputError(f"{target}: invalid Hub {what} name {part!r}: {why[:1].lower()}{why[1:]}") from None
    return repo_id
