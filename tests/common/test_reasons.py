"""The reason registry (`common/reasons.py`) is consistent, and the source tree gives no reason it does not register.

The scan reads every module's AST for string literals (and f-strings) that are reasons: those in the places a
reason is given (a `failure_reason=` / `reason=` argument, `ParseFailure(...)`, `BadResponse(...)`,
`Rejection([...])`, `UnreadableRow(...)`, `QuarantineRecord(...)`, a policy's `drop(...)`, a pandera check's
name, the return values of the functions that name a reason, a constant or table of reasons, a comparison with a
reason) and those shaped like one (`bad_response:...`, `http_...`, `<column>:<check>`, ...).

STRICT = False: the scan only reports (a warning, and the per-file list with `-s`); the registry's own
consistency is asserted. STRICT = True: every reason in the code must come from the registry, none written as a
literal outside `common/reasons.py`, and the curation policy's order of drop reasons must be the registry's.
"""

from __future__ import annotations

import ast
import re
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from common import reasons as r
from common.reasons import (
    GROUPS,
    AdapterRejection,
    Dropped,
    JudgeFailure,
    Reasons,
    SchemaCheck,
    ValueFault,
    catalog,
    column_reason,
    lookup,
    meaning,
)

STRICT = True

REPO = Path(__file__).resolve().parents[2]
REGISTRY = "common/reasons.py"

# ---------------------------------------------------------------- the registry


def test_every_reason_has_one_name_and_a_one_line_meaning():
    for group in GROUPS:
        members = group.reasons.__members__
        aliases = [name for name, m in members.items() if m.name != name]
        assert not aliases, f"{group.reasons.__name__}: {aliases} repeat another member's reason"
        for name, member in members.items():
            assert re.fullmatch(r"[A-Z][A-Z0-9_]*", name), name
            assert member.meaning and member.meaning == member.meaning.strip() and "\n" not in member.meaning, name
            assert len(member.meaning) <= 120, f"{name}: a meaning is one short line"
            assert re.fullmatch(r"[a-z][a-z0-9_]*(:<?[A-Za-z_]+>?|\(.*\))?", member.value) or member.is_template, \
                f"{name}: {member.value!r} is not a reason's shape"


def test_every_group_is_listed_once_and_the_catalog_lists_every_reason():
    defined = {v for v in vars(r).values() if isinstance(v, type) and issubclass(v, Reasons) and v is not Reasons}
    listed = [g.reasons for g in GROUPS]
    assert sorted(listed, key=str) == sorted(defined, key=str) and len(listed) == len(set(listed))
    stages = ["ingest", "judge", "review", "curate"]
    assert [g.stage for g in GROUPS] == sorted((g.stage for g in GROUPS), key=stages.index)
    entries = catalog()
    assert len(entries) == sum(len(g.reasons) for g in GROUPS)
    assert len({e.constant for e in entries}) == len(entries)
    assert all(e.meaning == getattr(r, e.constant.split(".")[0])[e.constant.split(".")[1]].meaning for e in entries)
    shown = {e.constant: e.reason for e in entries}
    assert shown["SchemaCheck.IS_TEXT"] == "<column>:is_text"
    assert shown["SchemaCheck.RESPONSES_DIFFER"] == "responses_differ"
    assert shown["JudgeFailure.HTTP_STATUS"] == "http_<code>"


def test_a_member_is_its_text():
    assert JudgeFailure.TOO_LONG == "too_long" and f"{JudgeFailure.TOO_LONG}" == "too_long"
    assert {JudgeFailure.TOO_LONG: 1}["too_long"] == 1
    assert str(Dropped.NOT_JUDGED) == "not_judged"


def test_templates_fill_and_match():
    assert JudgeFailure.HTTP_STATUS.of(503) == "http_503"
    assert JudgeFailure.CLIENT_ERROR.of("ValueError") == "client_error:ValueError"
    assert SchemaCheck.IN_RANGE.of(-3, 3) == "in_range(-3,3)"
    assert SchemaCheck.FITS_JUDGE_CONTEXT.of(188928) == "fits_judge_context(<=188928 bytes)"
    assert column_reason("history", SchemaCheck.NOT_EMPTY) == "history:not_empty"
    assert AdapterRejection.ADAPTER_ERROR.matches("adapter_error:KeyError")
    assert not AdapterRejection.ADAPTER_ERROR.matches("adapter_error:")
    assert not JudgeFailure.TOO_LONG.is_template and JudgeFailure.HTTP_STATUS.is_template
    with pytest.raises(ValueError):
        JudgeFailure.HTTP_STATUS.of()
    with pytest.raises(ValueError):
        JudgeFailure.TOO_LONG.of("x")


def test_lookup_finds_every_reason_as_stored():
    for group in GROUPS:
        for member in group.reasons:
            stored = member.of(*["x"] * len(re.findall(r"<[A-Za-z_]+>", member.value))) if member.is_template \
                else member.value
            found = lookup(stored)
            assert found is not None and (found.value == member.value or found.matches(stored)), (member, found)
            assert lookup(stored, group.reasons) is member
    assert lookup("bad_response:not_json") is JudgeFailure.BAD_RESPONSE_NOT_JSON  # the exact one before the template
    assert lookup("bad_response:usage") is JudgeFailure.BAD_RESPONSE
    assert lookup("overall_preference:in_range(-3,3)") is SchemaCheck.IN_RANGE
    assert lookup("utf8_bytes:fits_judge_context(<=188928 bytes)") is SchemaCheck.FITS_JUDGE_CONTEXT
    assert lookup("invalid_utf8:<key>") is ValueFault.INVALID_UTF8
    assert lookup("no_such_reason") is None and lookup("history:no_such_check") is None
    assert meaning("http_429") == JudgeFailure.HTTP_STATUS.meaning and meaning("nonsense") is None


# ---------------------------------------------------------------- the scan


@dataclass(frozen=True)
class Found:
    path: str
    line: int
    text: str  # the literal; an f-string's holes as {...}
    context: str
    registered: Reasons | None
    prefix: bool = False  # the literal is the start of the registered reason (matched with startswith)


_HOLE = "\x00"
# functions whose returned strings (and appended ones) are reasons
REASON_FUNCTIONS = {"row_problem", "_transient", "flatten_message", "sides", "split_shared_history", "last_turn_only",
                    "value_faults", "reason"}
# calls that take a reason: name -> (positional index, how the argument is read)
REASON_CALLS = {"ParseFailure": (0, "reason"), "BadResponse": (0, "bad_response"), "UnreadableRow": (1, "reason"),
                "Rejection": (0, "reason"), "QuarantineRecord": (1, "reason"), "drop": (0, "reason"),
                "quarantine": (1, "reason"), "move_aside": (1, "reason")}
CHECK_CALLS = {"Check", "element_check", "_ew", "ew"}
REASON_KEYWORDS = {"failure_reason", "reason", "reasons"}
# variables that hold a reason: a name ending in reason(s) or failure, and these
REASON_VARIABLES = re.compile(r"(.*_)?(reasons?|failure)|shared")
NOT_REASON_VARIABLES = {"finish_reason"}  # the server's word for why generation stopped


def _holds_reason(node: ast.AST) -> bool:
    name = _identifier(node)
    return name not in NOT_REASON_VARIABLES and REASON_VARIABLES.fullmatch(name) is not None


def _text(node: ast.AST) -> str | None:
    """A literal's text, an f-string's with its holes marked; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else _HOLE for v in node.values)
    return None


def _strings(node: ast.AST) -> list[ast.AST]:
    """The string nodes of a literal, or of the elements of a tuple, list or set of them."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if _text(e) is not None]
    return [node] if _text(node) is not None else []


def _identifier(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _identifier(node.value)
    if isinstance(node, ast.Call):
        return _identifier(node.func)
    return ""


def resolve(text: str, how: str) -> Reasons | None:
    """The registered reason a literal is (an f-string's holes match any variable part)."""
    sample = text.replace(_HOLE, "x")
    if how == "check":
        return lookup(sample, SchemaCheck)
    if how == "bad_response":
        return lookup(f"bad_response:{sample}", JudgeFailure)
    return lookup(sample)


def _prefix_of(text: str) -> Reasons | None:
    """The template a literal is the start of (`invalid_utf8:`, `<column>:fits_judge_context`), matched with
    `startswith`: at least the template's name, at most its text before the first variable part."""
    if _HOLE in text:
        return None
    column, sep, rest = text.partition(":")
    candidates = [(text, [m for g in GROUPS if g.reasons is not SchemaCheck for m in g.reasons])]
    if sep and re.fullmatch(r"[A-Za-z0-9_\-]+", column):
        candidates.append((rest, list(SchemaCheck)))
    for sample, members in candidates:
        for m in members:
            if m.is_template and m.prefix.startswith(sample) and len(sample) >= len(re.split(r"[(:]", m.prefix)[0]):
                return m
    return None


_SHAPED_PREFIXES = tuple(sorted({re.split(r"<[A-Za-z_]+>", m.value)[0] for g in GROUPS for m in g.reasons
                                 if m.is_template and re.split(r"<[A-Za-z_]+>", m.value)[0].endswith((":", "_"))}))


def _shaped(text: str) -> bool:
    """A literal shaped like a reason wherever it stands: a template's family, or `<column>:<check>`."""
    if "\n" in text or " " in text.split(":")[0]:
        return False
    if text.startswith(_SHAPED_PREFIXES) and resolve(text, "reason") is not None:
        return True
    column, sep, check = text.partition(":")
    return bool(sep and re.fullmatch(r"[A-Za-z0-9_\-]+", column) and lookup(check.replace(_HOLE, "x"), SchemaCheck))


def _distinctive(member: Reasons | None) -> bool:
    """A reason whose text is unlikely to mean anything else (compared with, it is a reason)."""
    return member is not None and "_" in member.value and not isinstance(member, Dropped)


def scan_source(path: str, source: str) -> list[Found]:
    tree = ast.parse(source)
    found: dict[tuple[int, int], Found] = {}

    def add(node: ast.AST, context: str, how: str = "reason") -> None:
        text = _text(node)
        if text is not None and (node.lineno, node.col_offset) not in found:
            member = resolve(text, how)
            start = _prefix_of(text) if member is None and how == "reason" else None
            found[(node.lineno, node.col_offset)] = Found(path, node.lineno, text.replace(_HOLE, "{...}"), context,
                                                          member or start, start is not None)

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Call):
            name = _identifier(node.func)
            for kw in node.keywords:
                if kw.arg in REASON_KEYWORDS:
                    for s in _strings(kw.value):
                        add(s, f"{kw.arg}=")
                if kw.arg == "name" and name in CHECK_CALLS:
                    add(kw.value, f"{name}(name=)", "check")
            if name in REASON_CALLS:
                index, how = REASON_CALLS[name]
                if len(node.args) > index:
                    for s in _strings(node.args[index]):
                        add(s, f"{name}(...)", how)
            if name in CHECK_CALLS and len(node.args) > 1:
                add(node.args[1], f"{name}(...)", "check")
            if name == "append" and function in REASON_FUNCTIONS and node.args:
                for s in _strings(node.args[0]):
                    add(s, f"{function}: appended")
        elif isinstance(node, ast.Return) and function in REASON_FUNCTIONS and node.value is not None:
            for s in _strings(node.value):
                add(s, f"{function}: returned")
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value in REASON_KEYWORDS:
                    add(value, f"{{{key.value!r}: ...}}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if node.value is not None and any(re.fullmatch(r"_?[A-Z][A-Z0-9_]*", n) for n in names):
                values = _collection(node.value)
                how = "check" if any("CHECK" in n for n in names) else "reason"
                members = [resolve(_text(v), how) for v in values]
                if any("REASON" in n or "CHECK" in n for n in names) or (values and all(members)) \
                        or any(_distinctive(m) for m in members):
                    for v in values:
                        add(v, f"{names[0]} = ...", how)
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _holds_reason(node.values[0]):
            for v in node.values[1:]:
                add(v, f"{_identifier(node.values[0])} or ...")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_holds_reason(s) for s in sides):
                for s in sides:
                    for lit in _strings(s):
                        add(lit, "compared")
        text = _text(node)
        if text is not None and _shaped(text):
            add(node, "shaped like a reason")
        if not isinstance(node, ast.JoinedStr):  # an f-string's pieces are not literals of their own
            for child in ast.iter_child_nodes(node):
                visit(child, function)

    visit(tree, None)
    return sorted(found.values(), key=lambda f: (f.line, f.text))


def _collection(node: ast.AST) -> list[ast.AST]:
    """The string values of a constant, tuple, list, set or dict (its values; nested dicts too)."""
    if isinstance(node, ast.Dict):
        return [s for v in node.values for s in _collection(v)]
    return _strings(node)


def packages() -> list[str]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])


def scan_tree() -> tuple[list[Found], int]:
    """(the reason literals of every module but the registry, modules read)."""
    found, read = [], 0
    for package in packages():
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel == REGISTRY:
                continue
            read += 1
            found += scan_source(rel, path.read_text(encoding="utf-8"))
    return found, read


def constant_of(f: Found) -> str:
    if f.registered is None:
        return "NOT REGISTERED"
    where = f"{type(f.registered).__name__}.{f.registered.name}"
    if f.prefix:
        return f"{where}.prefix"
    return f"{where}.of(...)" if f.registered.is_template and "{...}" in f.text else where


def report(found: list[Found]) -> str:
    lines, last = [], None
    for f in found:
        if f.path != last:
            lines.append(f"{f.path}:")
            last = f.path
        lines.append(f"  {f.line}: {f.text!r} ({f.context}) -> {constant_of(f)}")
    return "\n".join(lines)


def test_the_source_tree_gives_only_registered_reasons():
    found, read = scan_tree()
    assert read > 50, f"read {read} modules"
    unregistered = [f for f in found if f.registered is None]
    print(f"\n{len(found)} reason literals in {len({f.path for f in found})} files, {len(unregistered)} not registered:")
    print(report(found))
    from tasks.curate.select import REASONS

    order = [] if tuple(REASONS) == tuple(Dropped) else [f"tasks/curate/select.py REASONS {REASONS} is not Dropped's order"]
    if STRICT:
        assert not unregistered and not order, report(unregistered) + "\n".join(order)
        assert not found, "reasons written as literals (use common.reasons):\n" + report(found)
    elif found or order:
        warnings.warn(f"{len(found)} reason literals outside {REGISTRY} ({len(unregistered)} not registered)"
                      + "".join(f"; {o}" for o in order) + "; run with -s for the list", stacklevel=1)


# ---------------------------------------------------------------- the scan on planted code

PLANTED = '''
OVER = "over_budget"
ODD_REASONS = ("judge_tie", "made_up")
_CHECK_NAMES = {"not_nullable": "missing"}
KINDS = {"a": "history:roles_allowed", "b": {"c": "json_too_deep"}}
ORDERS = ("ab", "ba")
SUMMARY_KEYS = ("read", "valid", "contaminated")
EXPECTED = {"x": "invalid_utf8:", "y": "utf8_bytes:fits_judge_context", "z": "malformed_json"}

def row_problem(row):
    if row:
        return "not_planned"
    return "invented_here"

def _transient(err):
    return True, f"http_{err}"

def value_faults(row):
    faults = []
    faults.append(f"invalid_utf8:{row}")
    return faults

def elsewhere(x, reply, result, shared):
    JudgeResult(x, "failed", failure_reason="too_large")
    JudgeResult(x, "failed", failure_reason="bad_response:nonsense_here")
    ParseFailure("no_json", "detail")
    BadResponse("usage", "detail")
    Rejection([f"adapter_error:{x}"], "detail")
    Rejection(["brand_new_rejection"])
    pa.Check(lambda s: s, name="valid_utf8")
    element_check(lambda v: v, "is_text")
    element_check(lambda v: v, "not_a_known_check")
    drop("margin_below_min", x)
    counts[result.failure_reason or "unknown"] += 1
    if "multi_turn_divergent_history" in result.reasons or shared == "conversation_empty":
        pass
    if x == "both_bad" or x == "empty" or kind == "too_long" or reply.finish_reason == "length":
        pass
    self.quarantine(path, f"unreadable ({x})")
    show = {"reason": ("reason", str)}
    expected = "response_a:not_empty"
    rows.append({"position": 1, "reason": f"{x}: {reply}"})
    return "plain text", "timeout"
'''


def test_the_scan_finds_reasons_in_every_place_they_are_given():
    found = {(f.line, f.text): (f.context, constant_of(f)) for f in scan_source("planted.py", PLANTED)}
    assert found == {
        (2, "over_budget"): ("OVER = ...", "JudgeFailure.OVER_BUDGET"),
        (3, "judge_tie"): ("ODD_REASONS = ...", "Dropped.JUDGE_TIE"),
        (3, "made_up"): ("ODD_REASONS = ...", "NOT REGISTERED"),
        (4, "missing"): ("_CHECK_NAMES = ...", "SchemaCheck.MISSING"),
        (5, "history:roles_allowed"): ("KINDS = ...", "SchemaCheck.ROLES_ALLOWED"),
        (5, "json_too_deep"): ("KINDS = ...", "ReadFault.JSON_TOO_DEEP"),
        (8, "invalid_utf8:"): ("EXPECTED = ...", "ValueFault.INVALID_UTF8.prefix"),
        (8, "utf8_bytes:fits_judge_context"): ("EXPECTED = ...", "SchemaCheck.FITS_JUDGE_CONTEXT.prefix"),
        (8, "malformed_json"): ("EXPECTED = ...", "ReadFault.MALFORMED_JSON"),
        (12, "not_planned"): ("row_problem: returned", "ExchangeReject.NOT_PLANNED"),
        (13, "invented_here"): ("row_problem: returned", "NOT REGISTERED"),
        (16, "http_{...}"): ("_transient: returned", "JudgeFailure.HTTP_STATUS.of(...)"),
        (20, "invalid_utf8:{...}"): ("value_faults: appended", "ValueFault.INVALID_UTF8.of(...)"),
        (24, "too_large"): ("failure_reason=", "JudgeFailure.TOO_LARGE"),
        (25, "bad_response:nonsense_here"): ("failure_reason=", "JudgeFailure.BAD_RESPONSE"),
        (26, "no_json"): ("ParseFailure(...)", "JudgeFailure.NO_JSON"),
        (27, "usage"): ("BadResponse(...)", "JudgeFailure.BAD_RESPONSE"),
        (28, "adapter_error:{...}"): ("Rejection(...)", "AdapterRejection.ADAPTER_ERROR.of(...)"),
        (29, "brand_new_rejection"): ("Rejection(...)", "NOT REGISTERED"),
        (30, "valid_utf8"): ("Check(name=)", "SchemaCheck.VALID_UTF8"),
        (31, "is_text"): ("element_check(...)", "SchemaCheck.IS_TEXT"),
        (32, "not_a_known_check"): ("element_check(...)", "NOT REGISTERED"),
        (33, "margin_below_min"): ("drop(...)", "Dropped.MARGIN_BELOW_MIN"),
        (34, "unknown"): ("failure_reason or ...", "JudgeFailure.UNKNOWN"),
        (35, "multi_turn_divergent_history"): ("compared", "AdapterRejection.MULTI_TURN_DIVERGENT_HISTORY"),
        (35, "conversation_empty"): ("compared", "AdapterRejection.CONVERSATION_EMPTY"),
        (41, "response_a:not_empty"): ("shaped like a reason", "SchemaCheck.NOT_EMPTY"),
        (42, "{...}: {...}"): ("{'reason': ...}", "NOT REGISTERED"),
        (39, "unreadable ({...})"): ("quarantine(...)", "NOT REGISTERED"),
    }


def test_every_reason_the_quarantine_page_lists_is_registered():
    """docs/validation-and-quarantine.md lists the reasons each stage gives: each is one `lookup` knows."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "validation-and-quarantine.md").read_text(encoding="utf-8")
    stages = page.split("Stages and the reasons they give:", 1)[1].split("\n## ", 1)[0]
    said = [t for t in re.findall(r"`([^`]+)`", stages)
            if t not in ("read", "raw", "adapter", "pair") and "/" not in t and not t.isupper() and "_" in t + ":"]
    assert "row_too_large(<=N bytes)" in said and len(said) > 30
    assert [t for t in said if lookup(t) is None] == []
