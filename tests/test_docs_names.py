"""The pages (README.md and docs/*.md) name only what the code defines.

Each kind of name is read from the code and from the pages the way the pages write it:

- reasons, from `common/reasons.py` (`lookup`: templates such as `http_<code>` and `<column>:<check>` included):
  the backticked tokens of a table column headed `reason` or `outcome`, those right after "fails as",
  "failed as", "quarantined as", "rejected as", "withdrawn as" or "recorded as", and those inside the parentheses
  that follow the word "reason" ("a failed judgment with a reason (`empty`, `truncated`, ...)");
- CLI flags, from the typer app's commands through click: a command line (`curate judge --strategy swap`, in a
  code span or a line of a fenced block; `judge --json` alone counts too) gives only its command's flags, a
  `curate` word followed by no command of the app is an error; a flag on its own (`--max-in-flight`) or on a
  `python` line must be a flag of some command or a `--flag` string of the code (the benchmarks' and the vLLM
  command line's);
- policy keys, from `FilterPolicy`'s fields: the keys of a fenced TOML block's `[policy]` table, and the key of a
  `key = value` code span in a clause that speaks of the policy;
- settings, from `Settings`' fields as environment variables (`CURATE_<FIELD>`) and the `CURATE_*` names the
  code reads by hand: every `CURATE_X` a page writes, and the bare names of the settings page's list (written
  after "prefixed `CURATE_`");
- and, as the net under all of them, every backticked snake_case name (`over_budget`, `min_abs_margin`,
  `judge_runs`) must be a word the code (source, SQL, configuration, tests) holds somewhere.

Each check is a function of a page's text and the names, run on every page and on small planted texts, so that
a check that can no longer fail is noticed. No network: it imports the CLI and reads files."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pytest

THIS_FILE = Path(__file__).resolve()
REPO = THIS_FILE.parents[1]
CODE_DIRS = ("common", "curator", "flows", "tasks", "schemas", "warehouse", "testing", "benchmarks", "scripts",
             "deploy", "tests", ".ci")
CODE_FILES = ("prefect.yaml", "pyproject.toml", "mkdocs.yml")
CODE_SUFFIXES = {".py", ".sql", ".toml", ".yaml", ".yml", ".json", ".txt", ".sh", ""}

FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")
SPAN = re.compile(r"`([^`]+)`")
SNAKE = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w/.-])")
FLAG = re.compile(r"(?<![\w-])(--[a-z0-9]+(?:-[a-z0-9]+)*)(?=$|[\s\]=|,)\[])")
ENV = re.compile(r"\bCURATE_[A-Z0-9]+(?:_[A-Z0-9]+)*\b")
BARE_SETTING = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
REASON_SHAPED = re.compile(r"^(?:<\w+>|[a-z][a-z0-9_]*)(?::[^\s/]+|\([^)]*\))?$")
REASON_CUE = re.compile(r"\b(?:fails|failed|quarantined|rejected|withdrawn|recorded) as ((?:`[^`]+`(?:,\s*|\s+or\s+|"
                        r"\s+and\s+)?)+)")
REASON_LIST = re.compile(r"\breasons?\**\s*\(")
TOML_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")
TOML_TABLE = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+")
SPAN_KEY_VALUE = re.compile(r"^([a-z][a-z0-9_]*)\s*=\s*\S")
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")


# ---------------------------------------------------------------- what the code defines


@dataclass
class Names:
    commands: dict[str, set[str]]  # "review push" -> its flags; "" -> the app's own
    code_flags: set[str]  # every `--flag` string of the code (benchmarks, the vLLM command line, ...)
    policy_keys: set[str]
    env_names: set[str]
    words: set[str]  # every identifier-like word of the code
    is_reason: object = field(repr=False)  # str -> bool

    @property
    def all_flags(self) -> set[str]:
        return set().union(*self.commands.values()) | self.code_flags


def _code_texts(root: Path, skip: frozenset[Path] = frozenset()) -> list[str]:
    texts = []
    paths = [root / f for f in CODE_FILES] + [p for d in CODE_DIRS for p in sorted((root / d).rglob("*"))]
    for path in paths:
        if not path.is_file() or path.resolve() in skip or "__pycache__" in path.parts:
            continue
        if path.suffix not in CODE_SUFFIXES:
            continue
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    return texts


def _cli_flags() -> dict[str, set[str]]:
    import typer

    from curator.cli import app

    commands: dict[str, set[str]] = {}

    def walk(command, path: str) -> None:
        commands[path] = {o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}
        commands[path].add("--help")
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    return commands


@lru_cache(maxsize=1)
def code_names() -> Names:
    from common.reasons import lookup
    from common.settings import Settings
    from tasks.curate.policy import FilterPolicy

    texts = "\n".join(_code_texts(REPO, skip=frozenset({THIS_FILE})))  # this file plants wrong names
    env = {f"CURATE_{name.upper()}" for name in Settings.model_fields} | set(ENV.findall(texts))
    return Names(commands=_cli_flags(), code_flags=set(re.findall(r"[\"'](--[a-z0-9]+(?:-[a-z0-9]+)*)", texts)),
                 policy_keys=set(FilterPolicy.model_fields), env_names=env,
                 words=set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", texts)),
                 is_reason=lambda token: lookup(token) is not None)


# ---------------------------------------------------------------- how a page is read


@dataclass
class Page:
    paragraphs: list[tuple[int, str]]  # (first line, text with its newlines): prose and list items
    tables: list[tuple[int, list[list[str]]]]  # (first line, rows of cells; the header first)
    fences: list[tuple[int, str, list[str]]]  # (first line, language, lines)


def read_page(text: str) -> Page:
    page = Page([], [], [])
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := FENCE.match(line):
            lang, start, body = m.group(2).lower(), i + 2, []
            i += 1
            while i < len(lines) and not FENCE.match(lines[i]):
                body.append(lines[i])
                i += 1
            page.fences.append((start, lang, body))
            i += 1
            continue
        if line.lstrip().startswith("|"):
            start, rows = i + 1, []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                    rows.append(cells)
                i += 1
            page.tables.append((start, rows))
            continue
        if line.strip() and not line.startswith("#"):
            start, body = i + 1, []
            while i < len(lines) and lines[i].strip() and not FENCE.match(lines[i]) \
                    and not lines[i].lstrip().startswith("|") and not lines[i].startswith("#"):
                body.append(lines[i])
                i += 1
            page.paragraphs.append((start, "\n".join(body)))
            continue
        i += 1
    return page


def _clause(text: str, at: int) -> str:
    """The clause of `text` (up to a full stop or a semicolon) that holds the offset `at`."""
    cuts = [0] + [m.end() for m in re.finditer(r"[.;](?=\s)", text)] + [len(text)]
    return next(text[a:b] for a, b in zip(cuts, cuts[1:]) if a <= at < b)


def spans(page: Page) -> list[tuple[int, str, str]]:
    """(line, code span, the clause or table row it stands in) of every code span outside fenced blocks."""
    found = []
    for start, text in page.paragraphs:
        for m in SPAN.finditer(text):
            found.append((start + text.count("\n", 0, m.start()), m.group(1).replace("\n", " "),
                          _clause(text, m.start())))
    for start, rows in page.tables:
        for n, row in enumerate(rows):
            for cell in row:
                found += [(start + n + (n > 0), s, " | ".join(row)) for s in SPAN.findall(cell)]
    return found


def command_lines(page: Page) -> list[tuple[int, str]]:
    """(line, command) of every code span and every command of a fenced block (continued lines joined, pipes and
    `&&` split, leading `VAR=value` assignments and comments dropped)."""
    found = [(n, s) for n, s, _ in spans(page)]
    for start, lang, body in page.fences:
        if lang not in ("", "bash", "sh", "shell", "console"):
            continue
        joined: list[tuple[int, str]] = []
        for n, line in enumerate(body, start):
            if joined and joined[-1][1].endswith("\\"):
                joined[-1] = (joined[-1][0], joined[-1][1][:-1] + " " + line.strip())
            else:
                joined.append((n, line.strip()))
        for n, line in joined:
            line = re.sub(r"(^|\s)#.*$", "", line)
            found += [(n, part.strip()) for part in re.split(r"\|\||&&|\||;", line) if part.strip()]
    return found


# ---------------------------------------------------------------- the checks, each on one page's text


def reason_problems(text: str, names: Names) -> list[str]:
    page, claims = read_page(text), []
    for start, rows in page.tables:
        if not rows:
            continue
        columns = [i for i, h in enumerate(rows[0]) if re.fullmatch(r"(failure )?(reasons?|outcome)", h.lower())]
        for n, row in enumerate(rows[1:], 1):
            claims += [(start + n + 1, s) for i in columns if i < len(row) for s in SPAN.findall(row[i])]
    for start, para in page.paragraphs:
        def line_of(offset: int) -> int:
            return start + para.count("\n", 0, offset)

        for m in REASON_CUE.finditer(para):
            claims += [(line_of(m.start(1)), s) for s in SPAN.findall(m.group(1))]
        for m in REASON_LIST.finditer(para):
            depth, end = 1, m.end()
            while end < len(para) and depth:
                depth += {"(": 1, ")": -1}.get(para[end], 0)
                end += 1
            inner = para[m.end():end]
            claims += [(line_of(m.end() + s.start()), s.group(1)) for s in SPAN.finditer(inner)]
    return [f"{n}: `{token}` is no reason of common/reasons.py" for n, token in claims
            if REASON_SHAPED.match(token) and not names.is_reason(token)]


def flag_problems(text: str, names: Names) -> list[str]:
    wrong = []
    for n, line in command_lines(read_page(text)):
        words = line.split()
        while words and ENV_ASSIGNMENT.match(words[0]):
            words = words[1:]
        if not words:
            continue
        program = words[0]
        if program == "curate" or program.endswith("/curate"):
            path, rest = "", words[1:]
            while rest and f"{path} {rest[0]}".strip() in names.commands:
                path, rest = f"{path} {rest[0]}".strip(), rest[1:]
            if rest and not path and re.fullmatch(r"[a-z][a-z-]*", rest[0]):
                wrong.append(f"{n}: `curate {rest[0]}` is no command of curate")
                continue
            allowed = names.commands[path] | names.commands[""] if path or not rest or rest[0].startswith("-") \
                else names.all_flags  # `curate COMMAND --help`: a placeholder for any command
            where = f"curate {path}".strip()
        elif program in names.commands and program and any(FLAG.search(w) for w in words[1:]):
            allowed, where = names.commands[program] | names.commands[""], f"curate {program}"
        elif program.startswith("--") or program in ("python", "python3") or program.endswith("/python"):
            allowed, where = names.all_flags, "curate or the code"
        else:
            continue  # another program's command line (prefect, vllm, mkdocs, pip, ...)
        for word in words:
            for flag in FLAG.findall(word):
                if flag not in allowed:
                    wrong.append(f"{n}: `{flag}` is no flag of {where}")
    return wrong


def policy_problems(text: str, names: Names) -> list[str]:
    page, wrong = read_page(text), []
    for start, lang, body in page.fences:
        if lang != "toml":
            continue
        table = None
        for n, line in enumerate(body, start):
            if m := TOML_TABLE.match(line):
                table = m.group(1)
            elif (m := TOML_KEY.match(line)) and table == "policy" and m.group(1) not in names.policy_keys:
                wrong.append(f"{n}: `{m.group(1)}` is no key of the filter policy (FilterPolicy)")
    for n, token, context in spans(page):
        m = SPAN_KEY_VALUE.match(token)
        # `policy = ...` is the file's table itself, written wrong (a refused file)
        if m and re.search(r"\bpolic(y|ies)\b", context) and m.group(1) not in names.policy_keys | {"policy"}:
            wrong.append(f"{n}: `{m.group(1)}` is no key of the filter policy (FilterPolicy)")
    return wrong


def setting_problems(text: str, names: Names) -> list[str]:
    wrong = []
    for n, line in enumerate(text.splitlines(), 1):
        wrong += [f"{n}: {name} is no setting (common/settings.py) nor a variable the code reads"
                  for name in ENV.findall(line) if name not in names.env_names]
    for start, para in read_page(text).paragraphs:
        for sentence in re.split(r"(?<=\.)\s+(?=[A-Z])", para):
            if "prefixed `CURATE_`" not in sentence:
                continue
            offset = para.index(sentence)
            for m in SPAN.finditer(sentence):
                name = m.group(1)
                if BARE_SETTING.match(name) and f"CURATE_{name}" not in names.env_names:
                    line = start + para.count("\n", 0, offset + m.start())
                    wrong.append(f"{line}: `{name}` (CURATE_{name}) is no setting of common/settings.py")
    return wrong


def unknown_word_problems(text: str, names: Names) -> list[str]:
    wrong = []
    for n, token, _ in spans(read_page(text)):
        wrong += [f"{n}: `{word}` is named nowhere in the code" for word in SNAKE.findall(token)
                  if word not in names.words]
    return wrong


CHECKS = (reason_problems, flag_problems, policy_problems, setting_problems, unknown_word_problems)


def page_problems(text: str, names: Names) -> list[str]:
    return sorted({w for check in CHECKS for w in check(text, names)}, key=lambda w: int(w.split(":")[0]))


def pages(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


# ---------------------------------------------------------------- the repository


def test_the_names_are_read_from_the_code():
    names = code_names()
    assert {"judge", "build-version", "review push", "eval-set load"} <= set(names.commands)
    assert "--max-in-flight" in names.commands["judge"] and "--min-abs-margin" in names.commands["build-version"]
    assert "--served-model-name" in names.code_flags and "--pairs" in names.code_flags
    assert {"min_abs_margin", "target_agreement", "exports"} <= names.policy_keys
    assert {"CURATE_JUDGE_MAX_TOKENS", "CURATE_WAREHOUSE", "CURATE_TEST_VLLM_PYTHON"} <= names.env_names
    assert all(map(names.is_reason, ["over_budget", "http_503", "history:not_empty", "completions_over_cap(<=16)"]))


def test_every_page_names_only_what_the_code_defines():
    names, wrong, read = code_names(), [], 0
    for path in pages():
        text = path.read_text(encoding="utf-8")
        read += len(spans(read_page(text)))
        wrong += [f"{path.relative_to(REPO)}:{w}" for w in page_problems(text, names)]
    assert read > 1000, f"read only {read} code spans: are the pages read?"
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------- each check on a planted page

GOOD = """# A page

A pair over the budget fails as `over_budget`, never sent; an answer cut off is a failed judgment with a
reason (`truncated`, `no_answer_after_reasoning`, or a transport reason such as `http_500`), stored with its text.
A row is quarantined as `history:not_empty` or `non_text_content:<type>`. `curate judge --strategy swap` sends
both orders, `--max-in-flight` bounds them, `judge --json` prints the summary, and `CURATE_JUDGE_MAX_TOKENS`
bounds an answer. Stored in `judge_runs` with the reason (`ReviewReject` in `common/reasons.py`).

| answer | outcome |
|---|---|
| cut off | `truncated` |
| otherwise | a verdict |

```bash
CURATE_WAREHOUSE=x.duckdb curate build-version helpful --min-abs-margin 1.5 --json | jq .stats
curate review push helpful --to http://ls:8080 --select borderline
python benchmarks/scale.py --pairs 200000
prefect --no-prompt deploy --all
vllm serve M \\
  --served-model-name M --not-ours
```

```toml
[policy]
min_abs_margin = 1.0
exports = ["dpo"]
```

The policy sets `rm_margin_column = true` on purpose; a source sets `format = "auto"`.

Every setting is an environment variable prefixed `CURATE_`: `WAREHOUSE`, `JUDGE_MAX_TOKENS` (16384). The token
is `LABEL_STUDIO_API_KEY`, never a setting.
"""

# (what is planted in GOOD, the check that must fail, the words of its complaint)
PLANTED = [
    ("fails as `over_budget`", "fails as `exceeds_input_" + "budget`", reason_problems, "exceeds_input_budget"),
    ("`no_answer_after_reasoning`,", "`no_answer_after_" + "thinking`,", reason_problems, "no_answer_after_thinking"),
    ("| `truncated` |", "| `cut_" + "off` |", reason_problems, "cut_off"),
    ("quarantined as `history:not_empty`", "quarantined as `history:not_" + "blank`", reason_problems,
     "history:not_blank"),
    ("--strategy swap", "--stratgy swap", flag_problems, "--stratgy"),
    ("`--max-in-flight`", "`--max-inflight`", flag_problems, "--max-inflight"),
    ("`judge --json`", "`judge --publish-to`", flag_problems, "`--publish-to` is no flag of curate judge"),
    ("--select borderline", "--selection borderline", flag_problems, "`--selection` is no flag of curate review push"),
    ("--min-abs-margin 1.5", "--min-margin 1.5", flag_problems, "--min-margin"),
    ("--pairs 200000", "--pairz 200000", flag_problems, "--pairz"),
    ("curate judge --strategy", "curate judg --strategy", flag_problems, "`curate judg` is no command"),
    ("min_abs_margin = 1.0", "min_" + "margin = 1.0", policy_problems, "min_margin"),
    ("`rm_margin_column = true`", "`rm_margin_" + "col = true`", policy_problems, "rm_margin_col"),
    ("`CURATE_JUDGE_MAX_TOKENS`", "`CURATE_JUDGE_MAX_" + "TOKEN`", setting_problems, "CURATE_JUDGE_MAX_TOKEN"),
    ("CURATE_WAREHOUSE=x", "CURATE_WAREHOUS" + "=x", setting_problems, "CURATE_WAREHOUS"),
    ("`JUDGE_MAX_TOKENS` (16384)", "`JUDGE_MAX_" + "OUTPUT` (16384)", setting_problems, "CURATE_JUDGE_MAX_OUTPUT"),
    ("`judge_runs`", "`judge_" + "runz`", unknown_word_problems, "judge_runz"),
]


def test_a_planted_page_that_names_only_the_code_s_names_passes():
    page = read_page(GOOD)
    assert len(page.tables) == 1 and [lang for _, lang, _ in page.fences] == ["bash", "toml"]
    assert ("--not-ours" in " ".join(line for _, line in command_lines(page)))  # vLLM's line, not checked
    assert page_problems(GOOD, code_names()) == []


@pytest.mark.parametrize("good, bad, check, complaint", PLANTED, ids=[p[3] for p in PLANTED])
def test_a_planted_wrong_name_fails(good, bad, check, complaint):
    assert GOOD.count(good) == 1, good
    text = GOOD.replace(good, bad)
    wrong = check(text, code_names())
    assert len(wrong) == 1 and complaint in wrong[0], wrong
    line = int(wrong[0].split(":")[0])
    assert bad.split()[0].strip("`|") in text.splitlines()[line - 1] or bad in text.splitlines()[line - 1], \
        (line, wrong)
