"""Where the code says a registry member's name: the guard of the seams (a source, a benchmark). Every string
constant of every package the project ships is read (AST), docstrings and all; a constant that is exactly a
member's name is a finding, unless the file is allowed that name (its own module, say). The demo's choice of data
(`DEMO_*` constants of `curator/`) is the one allowance by kind rather than by file."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.test_layers import REPO, packages


def module_of(declared: Callable) -> str:
    """The repository path of the module where a member's function (its adapter's id, its comparisons) is defined:
    the member's own module."""
    return Path(inspect.getfile(declared)).resolve().relative_to(REPO).as_posix()


def _demo_constants(tree: ast.AST) -> set[int]:
    """The constants assigned to `DEMO_*` names (ids of their nodes)."""
    return {id(n) for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and all(isinstance(t, ast.Name) and t.id.startswith("DEMO_") for t in node.targets)
            for n in ast.walk(node.value)}


def names_said(names: Iterable[str], allowed: dict[str, set[str]], root: Path = REPO,
               shipped: list[str] | None = None) -> list[str]:
    """`file:line 'name'` of every constant equal to one of `names` outside what `allowed` ({file: names}) lets a
    file say, across the shipped packages."""
    names = set(names)
    found = []
    for package in shipped if shipped is not None else packages(root):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            demo = _demo_constants(tree) if rel.startswith("curator/") else set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and node.value in names - allowed.get(rel, set()) \
                        and id(node) not in demo:
                    found.append(f"{rel}:{node.lineno} {node.value!r}")
    return found


def allow(*pairs: tuple[str, str]) -> dict[str, set[str]]:
    """{file: names} from (file, name) pairs."""
    out: dict[str, set[str]] = {}
    for file, name in pairs:
        out.setdefault(file, set()).add(name)
    return out
