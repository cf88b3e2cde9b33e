"""Imports only point down: `curator` → `flows` → `tasks` → `schemas`, `warehouse` → `common`, and no flow
borrows another flow's private names. Read from the source (AST), so a lazy import inside a function counts."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIRST_PARTY = {"common", "curator", "flows", "tasks", "schemas", "testing", "warehouse"}
MAY_IMPORT = {
    "common": {"common"},
    "schemas": {"common", "schemas"},
    "warehouse": {"common", "schemas", "warehouse"},
    "tasks": {"common", "schemas", "warehouse", "tasks"},
    "testing": {"common", "tasks", "testing"},  # the stand-in runs through tasks.judge.server's ManagedServer
    "flows": {"common", "schemas", "warehouse", "tasks", "testing", "flows"},
    "curator": FIRST_PARTY,
}
# The one place the product starts the stand-in: `--launch-standin` (tests and demos), imported lazily.
EXCEPTIONS = {("tasks/judge/targets.py", "testing")}


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [a.name for a in node.names]


def test_imports_only_point_down():
    wrong = []
    for layer, allowed in MAY_IMPORT.items():
        for path in (REPO / layer).rglob("*.py"):
            rel = str(path.relative_to(REPO))
            for module, _ in _imports(path):
                top = module.split(".")[0]
                if top in FIRST_PARTY and top not in allowed and (rel, top) not in EXCEPTIONS:
                    wrong.append(f"{rel} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_no_flow_imports_another_flows_private_names():
    wrong = [f"{path.name} imports {module}.{name}"
             for path in (REPO / "flows").glob("*.py") for module, names in _imports(path)
             if module.startswith("flows.") for name in names if name.startswith("_")]
    assert not wrong, wrong


def test_no_sql_outside_the_warehouse():
    keywords = ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "CREATE TABLE")
    wrong = []
    for layer in FIRST_PARTY - {"warehouse"}:
        for path in (REPO / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        any(node.value.lstrip().upper().startswith(k) for k in keywords):
                    wrong.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not wrong, wrong
