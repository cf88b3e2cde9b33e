"""The documentation is the MkDocs site in docs/, and the repository points into it, never outside itself.

Every `docs/<page>.md` (with its `#anchor`, if any) that a file of the repository cites exists, and so does the
anchor; no file names the design notes that live outside the repository; every page of docs/ is in mkdocs.yml's
nav and every nav entry is a page; the README stays a front door (under 400 lines, its Quickstart's two set-up
commands as they are). `mkdocs build --strict` (in .ci/run) checks the links between the pages themselves.
Each check is a function that lists what is wrong, run on the repository and on a small planted tree, so that a
check that can no longer fail is noticed. No network, no build: it reads files."""

from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest
import yaml

THIS_FILE = Path(__file__).resolve()
REPO = THIS_FILE.parents[1]
README_MAX_LINES = 400
QUICKSTART_COMMANDS = (
    "bash scripts/demo     # installs into ./.venv and runs the main job on embedded defaults",
    "bash .ci/run          # installs into a fresh venv and runs the tests",
)
# Spelt in two parts so that this file does not name what it looks for.
OUTSIDE_NOTES = "DESIGN" + ".md"

# A citation of a page: `docs/name.md` or `docs/sub/name.md`, with an optional `#anchor`; not part of a longer
# path or URL (`site/docs/x.md`, `https://host/docs/x.md`).
CITATION = re.compile(r"(?<![\w./-])docs/((?:[\w-]+/)*[\w.-]+\.md)(?:#([\w-]+))?")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", "site", "data", "published",
              "logs"}


# ---------------------------------------------------------------- reading the tree


def repo_files(root: Path) -> list[Path]:
    """The repository's files: what git tracks or would track (ignored files left out), or, outside a git
    checkout, every file below `root` but for the folders of build output, data and environments."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True, timeout=30).stdout
        # git lists files of the enclosing checkout only when root is its top: a planted tree is not.
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                             check=True, text=True, timeout=30).stdout.strip()
        if Path(top).resolve() == root.resolve():
            return sorted(root / name for name in listed.decode().split("\0") if name and (root / name).is_file())
    except (OSError, subprocess.SubprocessError):
        pass
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and not _SKIP_DIRS.intersection(p.relative_to(root).parts[:-1]))


def text_of(path: Path) -> str | None:
    """A file's text, or None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc gives a heading (its default slugify, on the heading's plain text)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link reads as its text
    text = text.replace("`", "").replace("*", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (fenced code left out; a repeated heading gets `_1`, `_2`, ...)."""
    found: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            base, n = slug(m.group(2)), 0
            name = base
            while name in found:
                n += 1
                name = f"{base}_{n}"
            found.add(name)
    return found


def nav_pages(mkdocs_yml: Path) -> list[str]:
    """The pages mkdocs.yml's nav lists, in order (`Title: page.md`, a bare `page.md`, or a section of them)."""
    config = yaml.safe_load(mkdocs_yml.read_text(encoding="utf-8"))
    if not isinstance(config, dict) or not isinstance(config.get("nav"), list):
        raise AssertionError(f"{mkdocs_yml.name} has no nav list")
    pages: list[str] = []

    def walk(entries: list) -> None:
        for entry in entries:
            values = list(entry.values()) if isinstance(entry, dict) else [entry]
            for value in values:
                if isinstance(value, list):
                    walk(value)
                elif isinstance(value, str) and not re.match(r"\w+://", value):
                    pages.append(value)

    walk(config["nav"])
    return pages


# ---------------------------------------------------------------- the checks


def citation_problems(root: Path, skip: frozenset[Path] = frozenset()) -> tuple[list[str], int]:
    """(citations of a page or anchor that does not exist, citations read) over every file outside docs/ but
    those in `skip`."""
    wrong, read = [], 0
    anchors_of: dict[Path, set[str]] = {}
    for path in repo_files(root):
        rel = path.relative_to(root)
        if rel.parts[0] == "docs" or path.resolve() in skip:
            continue  # the pages link to each other relatively; mkdocs build --strict checks those
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for m in CITATION.finditer(line):
                read += 1
                page, anchor = root / "docs" / m.group(1), m.group(2)
                if not page.is_file():
                    wrong.append(f"{rel}:{number} cites docs/{m.group(1)}, which does not exist")
                elif anchor and anchor not in anchors_of.setdefault(page, anchors(page)):
                    wrong.append(f"{rel}:{number} cites docs/{m.group(1)}#{anchor}, but that page has no such "
                                 f"heading (it has: {', '.join(sorted(anchors_of[page]))})")
    return wrong, read


def outside_notes_problems(root: Path) -> list[str]:
    """Files that name the design notes kept outside the repository."""
    wrong = []
    for path in repo_files(root):
        text = text_of(path)
        if text is not None and OUTSIDE_NOTES.lower() in text.lower():
            lines = [n for n, line in enumerate(text.splitlines(), 1) if OUTSIDE_NOTES.lower() in line.lower()]
            wrong.append(f"{path.relative_to(root)}:{','.join(map(str, lines))} names {OUTSIDE_NOTES}, which is not "
                         "in the repository: cite the docs/ page that says it")
    return wrong


def nav_problems(root: Path) -> list[str]:
    """Pages of docs/ that the nav leaves out, nav entries that are no page, and pages listed twice."""
    docs = root / "docs"
    on_disk = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    listed = nav_pages(root / "mkdocs.yml")
    wrong = [f"docs/{p} is in no entry of mkdocs.yml's nav" for p in sorted(on_disk - set(listed))]
    wrong += [f"mkdocs.yml's nav lists {p}, which is not a page of docs/" for p in listed if p not in on_disk]
    wrong += [f"mkdocs.yml's nav lists {p} twice" for p in sorted({p for p in listed if listed.count(p) > 1})]
    if not on_disk:
        wrong.append("docs/ holds no page")
    return wrong


def readme_problems(root: Path) -> list[str]:
    """A README that grew past a front door, or whose Quickstart lost its set-up commands."""
    lines = (root / "README.md").read_text(encoding="utf-8").splitlines()
    wrong = []
    if len(lines) >= README_MAX_LINES:
        wrong.append(f"README.md has {len(lines)} lines (at most {README_MAX_LINES - 1}): move reference text "
                     "to docs/")
    try:
        start = lines.index("## Quickstart")
    except ValueError:
        return wrong + ["README.md has no '## Quickstart' section"]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = lines[start + 1:end]
    wrong += [f"README.md's Quickstart lacks the command line {c!r}" for c in QUICKSTART_COMMANDS if c not in section]
    return wrong


# ---------------------------------------------------------------- the repository


def test_every_cited_docs_page_and_anchor_exists():
    wrong, read = citation_problems(REPO, skip=frozenset({THIS_FILE}))  # this file plants missing pages
    assert read >= 12, f"read only {read} citations of docs/ pages: is the scan reading the repository?"
    assert not wrong, "\n".join(wrong)


def test_no_file_names_the_design_notes_outside_the_repository():
    assert len(repo_files(REPO)) > 100
    wrong = outside_notes_problems(REPO)
    assert not wrong, "\n".join(wrong)


def test_every_page_is_in_the_nav_and_every_entry_is_a_page():
    wrong = nav_problems(REPO)
    assert not wrong, "\n".join(wrong)


def test_the_readme_is_a_front_door_with_its_quickstart():
    wrong = readme_problems(REPO)
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------- each check on a planted tree

PAGE = """# The page

## A heading, with `code`

```bash
## not a heading
```

## A heading, with `code`
"""
MKDOCS = "site_name: x\nnav:\n  - Home: index.md\n  - Part:\n      - page.md\n      - Other: sub/other.md\n"
README = "# x\n\nIntro.\n\n## Quickstart\n\n```bash\n" + "\n".join(QUICKSTART_COMMANDS) + "\n```\n\n## Next\n"


def _tree(root: Path, files: dict[str, str] | None = None) -> Path:
    for name, text in {"README.md": README, "mkdocs.yml": MKDOCS, "docs/index.md": "# Home\n",
                       "docs/page.md": PAGE, "docs/sub/other.md": "# Other\n", **(files or {})}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_planted_tree_that_keeps_the_rules_passes(tmp_path):
    root = _tree(tmp_path, {"code/a.py": '"""See docs/page.md#a-heading-with-code, docs/page.md#a-heading-with-code_1."""\n',
                            "prefect.yaml": "# docs/sub/other.md#other\n"})
    assert anchors(root / "docs/page.md") == {"the-page", "a-heading-with-code", "a-heading-with-code_1"}
    assert citation_problems(root) == ([], 3)
    assert outside_notes_problems(root) == []
    assert nav_problems(root) == []
    assert readme_problems(root) == []


@pytest.mark.parametrize("citation, why", [
    ("docs/nowhere.md", "does not exist"),
    ("docs/page.md#not-a-heading", "has no such heading"),
    ("docs/page.md#not-a-heading-1", "has no such heading"),  # the fenced line is no heading
    ("docs/sub/nowhere.md#other", "does not exist"),
])
def test_a_citation_of_a_missing_page_or_anchor_fails(tmp_path, citation, why):
    root = _tree(tmp_path, {"tests/test_x.py": f"# ({citation})\n"})
    wrong, read = citation_problems(root)
    assert read == 1 and len(wrong) == 1 and why in wrong[0] and "tests/test_x.py:1" in wrong[0], wrong


def test_a_citation_inside_a_longer_path_or_url_is_not_one(tmp_path):
    root = _tree(tmp_path, {"a.md": "https://example.org/docs/x.md and build/docs/y.md\n"})
    assert citation_problems(root) == ([], 0)


def test_a_file_naming_the_notes_outside_the_repository_fails(tmp_path):
    root = _tree(tmp_path, {"tasks/x.py": f'"""The protocol ({OUTSIDE_NOTES} §1)."""\n',
                            "docs/page.md": PAGE + f"\nsee {OUTSIDE_NOTES.lower()}\n"})
    wrong = outside_notes_problems(root)
    assert [w.split(":")[0] for w in wrong] == ["docs/page.md", "tasks/x.py"], wrong


def test_a_page_outside_the_nav_or_an_entry_without_a_page_fails(tmp_path):
    root = _tree(tmp_path, {"docs/orphan.md": "# Orphan\n",
                            "mkdocs.yml": MKDOCS + "  - Gone: gone.md\n  - Again: page.md\n"})
    assert nav_problems(root) == ["docs/orphan.md is in no entry of mkdocs.yml's nav",
                                  "mkdocs.yml's nav lists gone.md, which is not a page of docs/",
                                  "mkdocs.yml's nav lists page.md twice"]


def test_a_long_readme_or_one_without_its_quickstart_commands_fails(tmp_path):
    root = _tree(tmp_path, {"README.md": README.replace(QUICKSTART_COMMANDS[1], "bash .ci/run")
                            + "line\n" * README_MAX_LINES})
    wrong = readme_problems(root)
    assert len(wrong) == 2 and "lines" in wrong[0] and QUICKSTART_COMMANDS[1] in wrong[1], wrong
    root = _tree(tmp_path, {"README.md": README.replace("## Quickstart", "## Start")})
    assert readme_problems(root) == ["README.md has no '## Quickstart' section"]
