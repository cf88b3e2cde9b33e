"""MkDocs hooks (mkdocs.yml `hooks:`): what the docs need to read alike on GitHub and on the built site."""

from __future__ import annotations

import re

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def on_page_markdown(markdown: str, **_: object) -> str:
    """A `|` inside a code span of a table row is written `\\|`, as GitHub needs; Python-Markdown already keeps
    pipes inside code spans out of the cell split and would show the backslash, so it goes."""
    lines = []
    for line in markdown.split("\n"):
        if line.lstrip().startswith("|"):
            line = _CODE_SPAN.sub(lambda m: m.group(0).replace("\\|", "|"), line)
        lines.append(line)
    return "\n".join(lines)
