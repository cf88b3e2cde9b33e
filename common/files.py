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
