"""Reading a small text file a person wrote (a filter policy, a sources declaration) without trusting it to be one:
a regular file, opened without blocking (a FIFO never hangs the command), at most a cap (/dev/zero never fills
memory), in UTF-8."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class UnreadableTextError(ValueError):
    """Why a small text file cannot be read, in words a caller puts after its own `{path}: cannot read ...: `."""


def read_small_text(path: Path, max_bytes: int, what: str) -> str:
    """The text of `path`: a regular file of at most `max_bytes`, in UTF-8 (a byte-order mark some editors write
    is no error); else `UnreadableTextError` saying why (`not a regular file`, `over N bytes: not {what}`, `not
    UTF-8 text (byte N)`, or the system's reason)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise UnreadableTextError(err.strerror or str(err)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnreadableTextError("not a regular file")
        data = b""
        while len(data) <= max_bytes and (chunk := os.read(fd, max_bytes + 1 - len(data))):
            data += chunk
    except OSError as err:
        raise UnreadableTextError(err.strerror or str(err)) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnreadableTextError(f"over {max_bytes} bytes: not {what}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise UnreadableTextError(f"not UTF-8 text (byte {err.start})") from None


class NotTomlError(UnreadableTextError):
    """The text is no TOML a person would write: a syntax error, or values nested past `MAX_TOML_DEPTH`."""


# Tables and arrays nested deeper than this are no policy or declaration (a declaration nests 5 levels: sources,
# the source, label, a label value's list); far deeper nesting would exhaust the parser's stack.
MAX_TOML_DEPTH = 16


def read_small_toml(path: Path, max_bytes: int, what: str) -> dict:
    """The TOML of a small file a person wrote (`read_small_text`), parsed by the standard library: a file that
    cannot be read is an `UnreadableTextError`; one that is no TOML, or nests tables and arrays deeper than
    `MAX_TOML_DEPTH`, a `NotTomlError` saying why, never a RecursionError."""
    import tomllib

    text = read_small_text(path, max_bytes, what)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise NotTomlError(str(err)) from None
    except RecursionError:
        raise NotTomlError(f"nested deeper than {MAX_TOML_DEPTH} levels") from None
    if _depth(data) > MAX_TOML_DEPTH:
        raise NotTomlError(f"nested deeper than {MAX_TOML_DEPTH} levels") from None
    return data


def _depth(value: object) -> int:
    """How deep tables and arrays nest in `value` (walked without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            deepest = max(deepest, depth)
            if depth <= MAX_TOML_DEPTH:  # past the limit the answer is known: no need to walk further
                stack += [(x, depth + 1) for x in v]
    return deepest
