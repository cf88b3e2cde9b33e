"""The errors a user can act on. The CLI prints such an error as one line and exits with code 2; any other
exception is a bug and keeps its traceback."""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix: a wrong input, a busy or unreadable file, a server that is down."""

    hint: str | None = None  # one optional line saying what to do next


class InvalidInputError(UserError, ValueError):
    """A parameter, a name or a file's content that the command cannot take."""


class NotFoundError(UserError, FileNotFoundError):
    """Something the command needs is not where it was said to be."""
