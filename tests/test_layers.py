"""The code is laid out as README.md's "How the code is laid out" says, read from the README itself: its table
names each layer and what it may import, and this test holds every module to it, both ways (no import outside
a layer's allowance, no allowance that no module uses). Inside `tasks/`, a stage imports only earlier stages:
ingest → judge → curate → evaluate, review → publish. No flow borrows another flow's private names, however it
reaches them (`from flows.x import _y`, `import flows.x as m; m._y`, `from flows import x; x._y`). No SQL is
written outside `warehouse/`. No module imports itself round a circle.

Imports are read from the source (AST), so a lazy import inside a function counts, and so does one under
`if TYPE_CHECKING:` (a type is a dependency too). A layer folder that is missing or holds no module is an error:
a check over no files proves nothing. Each rule is also run on a small planted tree, so that a rule that can no
longer fail is noticed."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README_HEADING = "## How the code is laid out"

# Stages of `tasks/`, earliest first; a stage may import itself and the stages of earlier entries only.
STAGES: tuple[tuple[str, ...], ...] = (("ingest",), ("judge",), ("curate",), ("evaluate", "review"), ("publish",),
                                        ("pipeline",))

# (file, module it imports) pairs the rules above excuse, each with its reason; the goal is none. An entry
# that excuses nothing is an error too.
EXCEPTIONS: set[tuple[str, str]] = set()  # none: the flows hand tasks/ the stand-in's launcher (flows/runs.py)


# ---------------------------------------------------------------- reading the README and the tree


class TableError(AssertionError):
    """README.md's layer table cannot be read as this test reads it."""


def packages(root: Path = REPO) -> list[str]:
    """The project's packages, as pyproject.toml ships them."""
    with (root / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _names(cell: str) -> list[str]:
    """The backticked names of a cell, without a trailing slash."""
    return [n.rstrip("/") for n in re.findall(r"`([^`]+)`", cell)]


def layer_rows(readme: str) -> list[tuple[list[str], str, str]]:
    """(layers, what they are, may import) per row of the table under README_HEADING, top to bottom."""
    lines = readme.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == README_HEADING)
    except StopIteration:
        raise TableError(f"README.md has no heading {README_HEADING!r}") from None
    table: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if line.lstrip().startswith("|"):
            table.append(line)
        elif table:
            break
    if len(table) < 3:
        raise TableError(f"no table under {README_HEADING!r}")
    header = [c.lower() for c in _cells(table[0])]
    if "layer" not in header or "may import" not in header:
        raise TableError(f"the table's header {header} has no 'layer' and 'may import' columns")
    at_layer, at_may = header.index("layer"), header.index("may import")
    at_what = next((i for i in range(len(header)) if i not in (at_layer, at_may)), None)
    rows = []
    for line in table[2:]:
        cells = _cells(line)
        if len(cells) != len(header):
            raise TableError(f"a row of {len(cells)} cells, not {len(header)}: {line[:80]!r}")
        layers = _names(cells[at_layer])
        if not layers or re.sub(r"`[^`]+`|\band\b|[,\s]", "", cells[at_layer]):
            raise TableError(f"the layer cell {cells[at_layer]!r} is not backticked folder names")
        rows.append((layers, cells[at_what] if at_what is not None else "", cells[at_may]))
    return rows


def allowances(rows: list[tuple[list[str], str, str]], known: set[str]) -> dict[str, set[str]]:
    """{layer: the layers it may import, itself included}. A "may import" cell is `everything below` (the layers of
    every later row), `nothing of the project`, or backticked names joined by commas and `and`, each perhaps
    followed by a remark in parentheses; each name must be one of `known`."""
    table: dict[str, set[str]] = {}
    for i, (layers, _, may) in enumerate(rows):
        text = re.sub(r"\([^)]*\)", "", may).strip()
        if text.lower() == "everything below":
            allowed = {layer for later in rows[i + 1:] for layer in later[0]}
        elif text.lower() == "nothing of the project":
            allowed = set()
        else:
            allowed = set(_names(text))
            rest = re.sub(r"`[^`]+`|\band\b|[,\s]", "", text)
            if rest or not allowed:
                raise TableError(f"{layers}: cannot read the 'may import' cell {may!r}")
            if unknown := allowed - known:
                raise TableError(f"{layers} may import {sorted(unknown)}: not packages of the project")
        for layer in layers:
            if layer in table:
                raise TableError(f"{layer} has two rows")
            table[layer] = allowed | {layer}
    return table


def readme_table(root: Path = REPO) -> dict[str, set[str]]:
    return allowances(layer_rows((root / "README.md").read_text(encoding="utf-8")), set(packages(root)))


def modules(root: Path, folder: str) -> list[Path]:
    return sorted((root / folder).rglob("*.py"))


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path, path: Path, tree: ast.AST | None = None) -> Iterator[tuple[str, list[str], int]]:
    """(module, names imported from it, line) of every import of `path`, relative ones resolved."""
    tree = tree or ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(root, path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, [a.name for a in node.names], node.lineno


def _excused(rel: str, module: str, used: set[tuple[str, str]]) -> bool:
    for file, target in EXCEPTIONS:
        if rel == file and (module == target or module.startswith(target + ".")):
            used.add((file, target))
            return True
    return False


# ---------------------------------------------------------------- the rules, each over a tree


def layer_problems(root: Path, table: dict[str, set[str]], shipped: list[str]) -> list[str]:
    """Packages the table does not place, layers that are not packages, and layers with no module."""
    wrong = [f"{p}/ is a package (pyproject.toml) but no layer of README's table" for p in shipped if p not in table]
    wrong += [f"{layer}/ is a layer of README's table but no package (pyproject.toml)" for layer in table
              if layer not in shipped]
    for layer in table:
        found = [p for p in modules(root, layer) if p.name != "__init__.py"] if (root / layer).is_dir() else None
        if found is None:
            wrong.append(f"{layer}/ is missing")
        elif not found:
            wrong.append(f"{layer}/ holds no module")
    return wrong


def import_violations(root: Path, table: dict[str, set[str]], first_party: set[str],
                      used: set[tuple[str, str]]) -> tuple[list[str], dict[str, set[str]]]:
    """(imports outside their layer's allowance, {layer: the layers it does import})."""
    wrong: list[str] = []
    imported: dict[str, set[str]] = {layer: set() for layer in table}
    for layer, allowed in table.items():
        for path in modules(root, layer):
            rel = path.relative_to(root).as_posix()
            for module, _, line in imports(root, path):
                top = module.split(".")[0]
                if top not in first_party:
                    continue
                if top not in allowed:
                    if not _excused(rel, module, used):
                        wrong.append(f"{rel}:{line} imports {module}: {layer} may import only "
                                     f"{', '.join(sorted(allowed))} (README.md)")
                    continue
                imported[layer].add(top)
    return wrong, imported


def unused_allowances(table: dict[str, set[str]], imported: dict[str, set[str]]) -> list[str]:
    """Allowances of the table that no module of the layer uses: the README says more than the code does."""
    return [f"README.md lets {layer} import {other}, but no module of {layer}/ does"
            for layer, allowed in table.items() for other in sorted(allowed - imported[layer] - {layer})]


def stage_of(module: str, names: list[str]) -> list[str]:
    """The `tasks` stages an import reaches (`from tasks import judge` reaches judge)."""
    parts = module.split(".")
    if parts[0] != "tasks":
        return []
    return [parts[1]] if len(parts) > 1 else list(names)


def stage_problems(root: Path, stages: tuple[tuple[str, ...], ...], readme_stages: list[str] | None) -> list[str]:
    """Stage folders of `tasks/` that are missing, empty or not ordered, and a README that names other ones."""
    ordered = [s for group in stages for s in group]
    present = sorted(p.name for p in (root / "tasks").iterdir() if p.is_dir() and (p / "__init__.py").exists())
    wrong = [f"tasks/{s}/ is a stage folder but has no place in STAGES" for s in present if s not in ordered]
    for stage in ordered:
        found = [p for p in modules(root, f"tasks/{stage}") if p.name != "__init__.py"] \
            if (root / "tasks" / stage).is_dir() else None
        if not found:
            wrong.append(f"tasks/{stage}/ is {'missing' if found is None else 'empty'}")
    loose = [p.name for p in (root / "tasks").glob("*.py") if p.name != "__init__.py"]
    wrong += [f"tasks/{name} belongs to no stage" for name in loose]
    if readme_stages is not None and sorted(readme_stages) != sorted(ordered):
        wrong.append(f"README's tasks/ row names the stages {sorted(readme_stages)}, STAGES {sorted(ordered)}")
    return wrong


def stage_violations(root: Path, stages: tuple[tuple[str, ...], ...], used: set[tuple[str, str]]) -> list[str]:
    """Imports of a later stage (or of a stage of the same rank) from inside `tasks/<stage>/`."""
    rank = {s: i for i, group in enumerate(stages) for s in group}
    wrong = []
    for stage in rank:
        for path in modules(root, f"tasks/{stage}"):
            rel = path.relative_to(root).as_posix()
            for module, names, line in imports(root, path):
                for target in stage_of(module, names):
                    if target == stage or target not in rank or rank[target] < rank[stage]:
                        continue
                    if not _excused(rel, f"tasks.{target}", used):
                        earlier = [s for s in rank if rank[s] < rank[stage]]
                        wrong.append(f"{rel}:{line} imports {module}: stage {stage} may import only "
                                     f"{', '.join(earlier + [stage])}")
    return wrong


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _dotted(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)) is not None:
        return base + [node.attr]
    return None


def private_borrowing(root: Path) -> list[str]:
    """Every way a flow module reaches another flow module's private names."""
    flow_modules = {_module_name(root, p) for p in modules(root, "flows") if p.name != "__init__.py"}
    wrong = []
    for path in modules(root, "flows"):
        rel, own = path.relative_to(root).as_posix(), _module_name(root, path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: dict[str, str] = {}  # local name -> the flows module (or package) it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "flows":
                        if alias.asname:
                            bound[alias.asname] = alias.name
                        else:
                            bound["flows"] = "flows"
        for module, names, line in imports(root, path, tree):
            if module == "flows":
                for node in ast.walk(tree):
                    if isinstance(node, ast.ImportFrom) and node.lineno == line:
                        for alias in node.names:
                            bound[alias.asname or alias.name] = f"flows.{alias.name}"
            elif module in flow_modules and module != own:
                wrong += [f"{rel}:{line} imports {module}.{n}" for n in names if _private(n)]

        def reached(parts: list[str]) -> tuple[str, str] | None:
            """(flows module, private name) that a dotted name reaches through a bound alias, or None."""
            if parts[0] not in bound:
                return None
            full = bound[parts[0]].split(".") + parts[1:]
            for cut in range(len(full) - 1, 0, -1):
                module = ".".join(full[:cut])
                if module in flow_modules:
                    return (module, full[cut]) if module != own and _private(full[cut]) else None
            return None

        for node in ast.walk(tree):
            hit = None
            if isinstance(node, ast.Attribute) and (parts := _dotted(node)) is not None:
                hit = reached(parts)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str) and (parts := _dotted(node.args[0])) is not None:
                hit = reached(parts + [node.args[1].value])
            if hit:
                wrong.append(f"{rel}:{node.lineno} uses {hit[0]}.{hit[1]}")
    return sorted(set(wrong))


def import_circles(root: Path, layers: list[str]) -> list[str]:
    """Every circle of imports between the project's modules (a lazy import, or one under TYPE_CHECKING, counts:
    an import hidden inside a function to dodge a circle is still one). `from a import b` is an arrow to the
    module `a.b` when there is one, else to `a`; a package's `__init__` reached through its submodules is not an
    arrow (Python runs it first, but that is loading, not a dependency)."""
    paths = [p for layer in layers for p in modules(root, layer)]
    known = {_module_name(root, p): p for p in paths}
    arrows: dict[str, set[str]] = {m: set() for m in known}
    for name, path in known.items():
        for module, names, _ in imports(root, path):
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
            if len(targets) < len(names) or not names:
                targets.append(module)
            arrows[name] |= {t for t in targets if t in known and t != name}
    # Tarjan's strongly connected components, iteratively: a component of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[str] = []
    for start in sorted(known):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        members.append(m)
                        if m == node:
                            break
                    if len(members) > 1:
                        circles.append(" <-> ".join(sorted(members)))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(arrows[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(circles)


SQL_KEYWORDS = ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "CREATE TABLE")


def sql_outside(root: Path, layers: list[str]) -> tuple[list[str], int]:
    """(string constants that start like SQL, in the given layers; files read)."""
    wrong, read = [], 0
    for layer in layers:
        for path in modules(root, layer):
            read += 1
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        any(node.value.lstrip().upper().startswith(k) for k in SQL_KEYWORDS):
                    wrong.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return wrong, read


def readme_stage_names(root: Path = REPO, layer: str = "tasks") -> list[str]:
    """The stage folders README's row of `layer` names (`ingest/`, `judge/`, ...)."""
    rows = layer_rows((root / "README.md").read_text(encoding="utf-8"))
    what = next(w for layers, w, _ in rows if layers == [layer])
    return [n.rstrip("/") for n in re.findall(r"`([a-z_]+/)`", what)]


# ---------------------------------------------------------------- the repository


def test_the_readme_table_places_every_package_and_no_layer_is_empty():
    wrong = layer_problems(REPO, readme_table(), packages())
    assert not wrong, "\n".join(wrong)


def test_imports_follow_the_readme_table_exactly():
    table, used = readme_table(), set()
    wrong, imported = import_violations(REPO, table, set(packages()), used)
    wrong += unused_allowances(table, imported)
    assert not wrong, "\n".join(wrong)


def test_tasks_stages_import_only_earlier_stages():
    used: set[tuple[str, str]] = set()
    wrong = stage_problems(REPO, STAGES, readme_stage_names()) + stage_violations(REPO, STAGES, used)
    assert not wrong, "\n".join(wrong)


def test_every_exception_still_excuses_an_import():
    used: set[tuple[str, str]] = set()
    import_violations(REPO, readme_table(), set(packages()), used)
    stage_violations(REPO, STAGES, used)
    assert EXCEPTIONS <= used, f"exceptions that excuse nothing (remove them): {sorted(EXCEPTIONS - used)}"


def test_no_flow_borrows_another_flows_private_names():
    wrong = private_borrowing(REPO)
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_round_a_circle():
    wrong = import_circles(REPO, packages())
    assert not wrong, "import circles:\n" + "\n".join(wrong)


def test_no_sql_outside_the_warehouse():
    layers = [p for p in packages() if p != "warehouse"]
    wrong, read = sql_outside(REPO, layers)
    assert read >= len(layers), f"read {read} files in {layers}"
    assert not wrong, wrong


# ---------------------------------------------------------------- each rule on a planted tree

README = """# x

## How the code is laid out

| layer | what it is | may import |
|---|---|---|
| `top/` | the entry point | everything below |
| `mid/` | the stages: `ingest/`, `judge/` | `low/` (a remark, with a comma), `base` |
| `low/` and `base/` | shared | `base` |

## Next
"""


def _tree(root: Path, files: dict[str, str], shipped: tuple[str, ...] = ("top", "mid", "low", "base")) -> Path:
    (root / "README.md").write_text(README)
    (root / "pyproject.toml").write_text(
        f"[tool.hatch.build.targets.wheel]\npackages = {list(shipped)!r}\n".replace("'", '"'))
    for name, text in {"top/__init__.py": "", "top/a.py": "import mid.x\nimport low.y\nimport base.z\n",
                       "mid/__init__.py": "", "mid/x.py": "import low.y\nfrom base import z\n",
                       "low/__init__.py": "", "low/y.py": "from base.z import f\n",
                       "base/__init__.py": "", "base/z.py": "def f(): pass\n", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _planted(root: Path) -> tuple[list[str], list[str]]:
    table = readme_table(root)
    wrong, imported = import_violations(root, table, set(packages(root)), set())
    return layer_problems(root, table, packages(root)), wrong + unused_allowances(table, imported)


def test_the_table_is_read_as_written(tmp_path):
    table = readme_table(_tree(tmp_path, {}))
    assert table == {"top": {"top", "mid", "low", "base"}, "mid": {"mid", "low", "base"}, "low": {"low", "base"},
                     "base": {"base"}}
    assert readme_stage_names(tmp_path, "mid") == ["ingest", "judge"]
    assert _planted(tmp_path) == ([], [])


def test_a_circle_of_imports_fails_however_it_is_hidden(tmp_path):
    _tree(tmp_path, {"low/w.py": "def g():\n    from low import v  # lazy: counts\n",
                     "low/v.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from low.w import g\n",
                     "mid/p.py": "from mid import q\n", "mid/q.py": "import mid.r\n", "mid/r.py": "from .p import x\n"})
    assert import_circles(tmp_path, packages(tmp_path)) == ["low.v <-> low.w", "mid.p <-> mid.q <-> mid.r"]
    _tree(tmp_path, {"low/v.py": "", "mid/r.py": "from mid import x\n"})  # one way only: no circle
    assert import_circles(tmp_path, packages(tmp_path)) == []


@pytest.mark.parametrize("cell", ["`low` but not `base`", "anything", "`nowhere`"])
def test_an_unreadable_may_import_cell_is_an_error(tmp_path, cell):
    _tree(tmp_path, {})
    (tmp_path / "README.md").write_text(README.replace("`low/` (a remark, with a comma), `base`", cell))
    with pytest.raises(TableError):
        readme_table(tmp_path)


def test_an_import_against_the_table_fails(tmp_path):
    _tree(tmp_path, {"low/w.py": "def g():\n    from low import y\n    from mid import x  # lazy: counts\n",
                     "base/u.py": "from ..low import y\n"})
    _, wrong = _planted(tmp_path)
    assert sorted(wrong) == ["base/u.py:1 imports low: base may import only base (README.md)",
                             "low/w.py:3 imports mid: low may import only base, low (README.md)"]


def test_an_allowance_no_module_uses_fails(tmp_path):
    _tree(tmp_path, {"mid/x.py": "from base import z\n"})
    assert _planted(tmp_path)[1] == ["README.md lets mid import low, but no module of mid/ does"]


@pytest.mark.parametrize("layer", ["low", "base"])
def test_an_empty_or_missing_layer_fails(tmp_path, layer):
    _tree(tmp_path, {})
    for path in (tmp_path / layer).glob("*.py"):
        if path.name != "__init__.py":
            path.unlink()
    assert _planted(tmp_path)[0] == [f"{layer}/ holds no module"]
    for path in (tmp_path / layer).glob("*.py"):
        path.unlink()
    (tmp_path / layer).rmdir()
    assert _planted(tmp_path)[0] == [f"{layer}/ is missing"]


def test_a_package_the_table_does_not_place_fails(tmp_path):
    _tree(tmp_path, {"extra/__init__.py": "", "extra/e.py": ""}, shipped=("top", "mid", "low", "base", "extra"))
    assert _planted(tmp_path)[0] == ["extra/ is a package (pyproject.toml) but no layer of README's table"]


def _tasks_tree(root: Path, files: dict[str, str]) -> Path:
    names = [s for group in STAGES for s in group]
    stages = {f"tasks/{s}/__init__.py": "" for s in names}
    modules_ = {f"tasks/{s}/m.py": "" for s in names}
    for name, text in {"tasks/__init__.py": "", **stages, **modules_, **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_stage_importing_a_later_one_fails(tmp_path):
    _tasks_tree(tmp_path, {
        "tasks/curate/ok.py": "from tasks.judge import m\nimport tasks.ingest.m\nfrom tasks.curate import m as own\n",
        "tasks/judge/late.py": "def f():\n    from tasks.curate.m import x\n",
        "tasks/evaluate/peer.py": "from tasks import review\n",
        "tasks/review/up.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tasks.publish import m\n",
        "tasks/ingest/rel.py": "from ..judge import m\n",
    })
    wrong = stage_violations(tmp_path, STAGES, set())
    assert sorted(wrong) == sorted([
        "tasks/judge/late.py:2 imports tasks.curate.m: stage judge may import only ingest, judge",
        "tasks/evaluate/peer.py:1 imports tasks: stage evaluate may import only ingest, judge, curate, evaluate",
        "tasks/review/up.py:3 imports tasks.publish: stage review may import only ingest, judge, curate, review",
        "tasks/ingest/rel.py:1 imports tasks.judge: stage ingest may import only ingest",
    ])
    assert stage_problems(tmp_path, STAGES, [s for group in STAGES for s in group]) == []


def test_a_stray_empty_or_unnamed_stage_fails(tmp_path):
    _tasks_tree(tmp_path, {"tasks/extra/__init__.py": "", "tasks/loose.py": ""})
    (tmp_path / "tasks/publish/m.py").unlink()
    assert stage_problems(tmp_path, STAGES, ["ingest", "judge"]) == [
        "tasks/extra/ is a stage folder but has no place in STAGES", "tasks/publish/ is empty",
        "tasks/loose.py belongs to no stage",
        "README's tasks/ row names the stages ['ingest', 'judge'], STAGES "
        "['curate', 'evaluate', 'ingest', 'judge', 'pipeline', 'publish', 'review']"]


def test_private_names_borrowed_any_way_fail(tmp_path):
    files = {
        "flows/__init__.py": "",
        "flows/runs.py": "def _hidden(): pass\ndef shown(): pass\n",
        "flows/own.py": "def _mine(): pass\n_mine()\nimport flows.own as me\nme._mine()\n",
        "flows/a.py": "from flows.runs import _hidden, shown\n",
        "flows/b.py": "import flows.runs as r\nr.shown()\nr._hidden()\nr.__name__\n",
        "flows/c.py": "from flows import runs\nruns._hidden()\n",
        "flows/d.py": "import flows.runs\nflows.runs._hidden()\n",
        "flows/e.py": "def f():\n    from flows import runs as x\n    return getattr(x, '_hidden')\n",
        "flows/f.py": "from .runs import _hidden\n",
        "flows/g.py": "import flows.runs\nflows.runs.shown()\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert private_borrowing(tmp_path) == sorted([
        "flows/a.py:1 imports flows.runs._hidden", "flows/b.py:3 uses flows.runs._hidden",
        "flows/c.py:2 uses flows.runs._hidden", "flows/d.py:2 uses flows.runs._hidden",
        "flows/e.py:3 uses flows.runs._hidden", "flows/f.py:1 imports flows.runs._hidden"])


def test_sql_outside_the_warehouse_fails(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks/q.py").write_text('Q = "  select * from pairs"\nN = "selected pairs"\n')
    assert sql_outside(tmp_path, ["tasks"]) == (["tasks/q.py:1"], 1)


def test_an_exception_excuses_its_import_only_and_a_stale_one_shows(tmp_path, monkeypatch):
    import sys

    _tree(tmp_path, {"low/w.py": "import mid.x\nimport top.a\n"})
    monkeypatch.setattr(sys.modules[__name__], "EXCEPTIONS", {("low/w.py", "mid"), ("base/z.py", "top")})
    used: set[tuple[str, str]] = set()
    wrong, _ = import_violations(tmp_path, readme_table(tmp_path), set(packages(tmp_path)), used)
    assert wrong == ["low/w.py:2 imports top.a: low may import only base, low (README.md)"]
    assert used == {("low/w.py", "mid")}  # ("base/z.py", "top") excuses nothing: the repository test names it
