"""Reading `sources.toml` (docs/sources.md#the-declaration): its `[sources.NAME]` tables, each checked into a
`Declaration` before any row is read.

The file is read strictly: a regular UTF-8 file of at most `MAX_SOURCES_BYTES` (`common.files`), TOML by the
standard library, `[sources.NAME]` tables and nothing else. A mistake is refused in one line that names the file,
the source and the key: an unknown key (with the nearest known one), a value of the wrong type (nothing is
coerced: `splits = "train"` is not a list), both or neither of `path` and `hub_id`, a name that is not a valid one
or is a built-in source's, an unknown format, then whatever the format's own `check` finds. When a file holds
several mistakes, the first is named and the others counted.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from common.errors import CONTROL, shown
from common.files import NotTomlError, UnreadableTextError, read_small_toml
from schemas.checks import visible_text
from tasks.ingest.declared.model import AUTO, FORMAT_NAMES, Declaration, DeclarationError, Format

MAX_SOURCES_BYTES = 1 << 20  # a declaration is a few hundred bytes a source
# every command that reads the file checks each declaration (a millisecond or less each): a bound on what it costs
MAX_DECLARED_SOURCES = 1000
# a source's name is a warehouse value, a flow parameter, a Prefect artifact key and a `curate run --source NAME=FILE`
# spec: lowercase letters, digits, '-' and '_', no '=' or '.'
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
RESERVED_NAMES = frozenset({"eval"})  # `curate synth eval` writes an evaluation set, not a source's rows
# a Hub dataset repository: ORG/NAME (the Hub's own rule, less its length limit)
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
# what the local readers take (tasks.ingest.read.read_local), by suffix
FILE_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".parquet")

# every key a [sources.NAME] table may hold, and what it is (docs/sources.md#the-declaration says the same)
KEYS: dict[str, str] = {
    "path": "a local JSONL(.gz), JSON or Parquet file, or a folder in the Hub's layout (a published version's), "
            "relative to this file's folder",
    "hub_id": "a Hub dataset, ORG/NAME",
    "config": "the dataset's configuration (hub_id or a folder)",
    "splits": "the dataset's splits, a list of strings (hub_id: default [\"train\"]; a folder: default all of the "
              "config's)",
    "revision": "a Hub branch, tag or commit to pin on first use (hub_id only; default: main)",
    "format": f"{', '.join(FORMAT_NAMES)} or {AUTO} (default {AUTO}: told from the first rows' columns)",
    "columns": "the format's column -> this data's column, where they differ",
    "label": "the label rule of the format (pairwise, rated)",
    "models": "the columns naming the models that wrote the answers",
    "license": "the license the rows are under (required)",
    "description": "one line saying what the rows are",
    "domain": "the domain of every row, when the data does not say",
    "language": "the language of every row, when the data does not say",
    "human_labels": "true when people gave the labels (default false: a model's, a vendor's or a release's picks "
                    "never certify a version)",
    "redistribute": "false when the rows may not be redistributed whatever the license says (default true): a "
                    "public Hub repository refuses them as it refuses a restricted license",
    "prompt_format": "\"hh\": a text prompt is a Human/Assistant transcript, parsed into turns as the hh format "
                     "parses its transcripts (formats with a prompt column)",
}
WHERE_KEYS = ("path", "hub_id")
HUB_ONLY_KEYS = ("config", "splits", "revision")
FOLDER_KEYS = ("config", "splits")  # a folder in the Hub's layout has configs and splits, not commits
TEXT_KEYS = ("path", "hub_id", "config", "revision", "format", "license", "description", "domain", "language",
             "prompt_format")
MAPPING_KEYS = ("columns", "models")  # tables of strings


@dataclass(frozen=True)
class _Where:
    """Where a mistake is, for its one line: `sources.toml: [sources.team-pairs] license: ...`."""

    origin: str
    name: str

    def refuse(self, key: str, why: str) -> DeclarationError:
        return DeclarationError(f"{self.origin}: [sources.{self.name}] {key}: {why}")


def read_declarations(path: Path, formats: Mapping[str, Format], builtin: Collection[str]) -> dict[str, Declaration]:
    """Every source `path` declares, by name, in the file's order; a mistake anywhere is a `DeclarationError`.
    `formats`: the formats by name; `builtin`: the names a declaration may not take."""
    try:
        data = read_small_toml(path, MAX_SOURCES_BYTES, "a sources file")
    except NotTomlError as err:
        raise DeclarationError(f"{path}: not valid TOML: {err}") from None
    except UnreadableTextError as err:
        raise DeclarationError(f"{path}: cannot read the sources: {err}") from None
    return parse_declarations(data, path, formats, builtin)


def parse_declarations(data: Mapping[str, Any], origin: Path, formats: Mapping[str, Format],
                       builtin: Collection[str]) -> dict[str, Declaration]:
    """The declarations of a parsed sources file (see `read_declarations`)."""
    beside = [k for k in data if k != "sources"]
    if beside:
        raise DeclarationError(f"{origin}: {beside[0]}: unknown top-level key; the file holds [sources.NAME] tables "
                               "only" + _nearest(beside[0], ["sources"]))
    tables = data.get("sources", {})
    if not isinstance(tables, dict):
        given = "an array of tables [[sources]]" if isinstance(tables, list) else f"sources = {tables!r}"
        raise DeclarationError(f"{origin}: the file holds [sources.NAME] tables, not {given}")
    if len(tables) > MAX_DECLARED_SOURCES:
        raise DeclarationError(f"{origin}: {len(tables):,} [sources.NAME] tables: a sources file declares at most "
                               f"{MAX_DECLARED_SOURCES:,} sources")
    found: dict[str, Declaration] = {}
    mistakes: list[DeclarationError] = []
    for name, table in tables.items():
        try:
            found[name] = parse_declaration(name, table, origin, formats, builtin)
        except DeclarationError as err:
            mistakes.append(err)
    if mistakes:
        more = len(mistakes) - 1
        raise DeclarationError(str(mistakes[0]) + (f" (and {more} more source{'s' if more > 1 else ''} with a "
                                                   "mistake)" if more else ""))
    return found


def parse_declaration(name: str, table: Any, origin: Path, formats: Mapping[str, Format],
                      builtin: Collection[str]) -> Declaration:
    """One `[sources.NAME]` table, checked: its name, its keys and their types, where its rows live, its format,
    then the format's own check."""
    where = _Where(str(origin), name)
    if not NAME.fullmatch(name):
        raise where.refuse("name", "not a valid source name: lowercase letters, digits, '-' and '_', starting with "
                                   "a letter or digit, at most 63 characters")
    if name in builtin or name in RESERVED_NAMES:
        raise where.refuse("name", f"{name!r} is the name of a built-in source: pick another name")
    if not isinstance(table, dict):
        raise where.refuse("name", f"a [sources.{name}] table, not {_kind(table)} ({table!r})")
    for key in table:
        if key not in KEYS:
            raise where.refuse(key, "unknown key" + (_nearest(key, KEYS) or f" (keys: {', '.join(KEYS)})"))
    for key in TEXT_KEYS:
        if key in table and (not isinstance(table[key], str) or (key != "description" and not visible_text(table[key]))):
            raise where.refuse(key, f"a non-empty string, not {_shown(table[key])}")
        if key in table and (found := CONTROL.search(table[key])):
            raise where.refuse(key, f"one line of plain text, not one holding the control character "
                                    f"{shown(found.group())} ({_shown(table[key])})")
    for key in MAPPING_KEYS:
        if key in table:
            _check_mapping(where, key, table[key])
    if "label" in table and not isinstance(table["label"], dict):
        raise where.refuse("label", f"a table such as label = {{ ... }}, not {_shown(table['label'])}")

    given = [k for k in WHERE_KEYS if k in table]
    if len(given) != 1:
        raise where.refuse("path" if not given else "hub_id", "give exactly one of path (a local file or folder) "
                           "and hub_id (a Hub dataset)" + (", not both" if given else ""))
    splits_default: tuple[str, ...] = ("train",)
    if "path" in table:
        path, hub_id = _local_path(where, table["path"], origin), None
        folder = is_folder_path(path)
        for key in HUB_ONLY_KEYS:
            if key in table and not (folder and key in FOLDER_KEYS):
                raise where.refuse(key, "applies to a Hub dataset (hub_id) only, not to a folder (path): a "
                                        "folder has no commits" if folder else
                                        "applies to a Hub dataset (hub_id) or a folder in its layout, not to a "
                                        "local file (path)")
        if folder:
            splits_default = ()  # every split the config has (tasks.ingest.read.read_folder)
    else:
        path, hub_id = None, table["hub_id"]
        if not HUB_ID.fullmatch(hub_id):
            raise where.refuse("hub_id", f"{hub_id!r} is not a Hub dataset id ORG/NAME")
    splits = _splits(where, table["splits"]) if "splits" in table else splits_default
    revision = table.get("revision")
    if revision is not None and re.search(r"\s", revision):
        raise where.refuse("revision", f"{revision!r}: a branch, tag or commit has no spaces")

    license_ = table.get("license")
    if license_ is None:
        raise where.refuse("license", "required: the license the rows are under (e.g. \"cc-by-4.0\", or "
                                      "\"internal\")")
    format_name = table.get("format", AUTO)
    if format_name != AUTO and format_name not in formats:
        raise where.refuse("format", f"unknown format {format_name!r}" + (_nearest(format_name, [*formats, AUTO])
                                                                          or f" (formats: {', '.join([*formats, AUTO])})"))
    decl = Declaration(
        name=name, origin=origin.resolve(), format=format_name, license=license_,
        description=table.get("description", ""), path=path, hub_id=hub_id, config=table.get("config"),
        splits=splits, revision=revision, columns=dict(table.get("columns", {})),
        label=dict(table.get("label", {})), models=dict(table.get("models", {})), domain=table.get("domain"),
        language=table.get("language"), human_labels=_human_labels(where, table, path),
        prompt_format=table.get("prompt_format"), redistribute=_redistribute(where, table),
    )
    if format_name != AUTO:
        check_with_format(decl, formats[format_name], where)
    else:
        _check_keys_of_any_format(where, decl, formats)
    return decl


def _human_labels(where: _Where, table: Mapping[str, Any], path: Path | None) -> bool:
    """The declaration's `human_labels` (a boolean, default false); a version of this project read back (its card
    says so) carries the judge's or the reviewers' picks, never people's labels, and cannot say true."""
    value = table.get("human_labels", False)
    if not isinstance(value, bool):
        raise where.refuse("human_labels", f"true or false, not {_shown(value)}")
    if value and path is not None and is_release_folder(path):
        raise where.refuse("human_labels", "the folder is a version this project published: its labels are the judge's "
                                           "or reviewers' picks, not people's labels")
    return value


def _redistribute(where: _Where, table: Mapping[str, Any]) -> bool:
    """The declaration's `redistribute` (a boolean, default true)."""
    value = table.get("redistribute", True)
    if not isinstance(value, bool):
        raise where.refuse("redistribute", f"true or false, not {_shown(value)}")
    return value


def is_release_folder(path: Path) -> bool:
    """Whether `path` is a folder holding a version this project published: its card's YAML tags it
    `preference-curator` (or, before that tag, both `preference` and `llm-judge`)."""
    card = path / "README.md"
    if not path.is_dir() or not card.is_file():
        return False
    try:
        text = card.read_text(encoding="utf-8", errors="replace")[:65536]
        front = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else None
    except (OSError, yaml.YAMLError, IndexError):
        return False
    tags = set(front.get("tags") or []) if isinstance(front, dict) and isinstance(front.get("tags"), list) else set()
    return "preference-curator" in tags or {"preference", "llm-judge"} <= tags


def check_with_format(decl: Declaration, fmt: Format, where: _Where | None = None) -> None:
    """The declaration against its format's own `check` (its columns, models and label rule); the first mistake
    as a `DeclarationError`, the others counted. `where`: how the file is named (default: its full path)."""
    where = where or _Where(str(decl.origin), decl.name)
    mistakes = fmt.check(decl)
    if mistakes:
        more = f" (and {len(mistakes) - 1} more)" if len(mistakes) > 1 else ""
        raise DeclarationError(f"{where.origin}: [sources.{where.name}] {mistakes[0]}{more}")


def _check_keys_of_any_format(where: _Where, decl: Declaration, formats: Mapping[str, Format]) -> None:
    """`format = "auto"`: the format is told from the first batch, when `check_with_format` runs; a column or label
    key no format knows is refused now."""
    columns = sorted({c for f in formats.values() for c in (*f.required_columns, *f.optional_columns,
                                                             *f.inner_columns)})
    labels = sorted({k for f in formats.values() for k in f.label_keys})
    for key in decl.columns:
        if key not in columns:
            raise where.refuse(f"columns.{key}", "not a column of any format" + _nearest(key, columns))
    for key in decl.label:
        if key not in labels:
            raise where.refuse(f"label.{key}", "not a label key of any format" + _nearest(key, labels))


def _check_mapping(where: _Where, key: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise where.refuse(key, f"a table of strings such as {key} = {{ name = \"column\" }}, not {_shown(value)}")
    for k, v in value.items():
        if not isinstance(v, str) or not v:
            raise where.refuse(f"{key}.{k}", f"a column name (a non-empty string), not {_shown(v)}")


def _local_path(where: _Where, text: str, origin: Path) -> Path:
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = Path(os.path.normpath(origin.resolve().parent / path))  # "../x" said as the folder it names
    if not is_folder_path(path) and not path.name.lower().endswith(FILE_SUFFIXES):
        raise where.refuse("path", f"{text!r} is not a file the ingest reads ({', '.join(FILE_SUFFIXES)}) nor a "
                                   "folder in the Hub's layout")
    return path


def is_folder_path(path: Path) -> bool:
    """A declared `path` names a folder in the Hub's layout (a README.md card whose configs name the data files,
    as a published version is) when it is one, or when nothing is there yet and its name has no suffix."""
    return path.is_dir() or (not path.exists() and not path.suffix)


def _splits(where: _Where, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(s, str) and s.strip() for s in value):
        raise where.refuse("splits", f"a non-empty list of split names such as [\"train\"], not {_shown(value)}")
    if len(set(value)) != len(value):
        raise where.refuse("splits", f"{value!r} names a split twice")
    return tuple(value)


def _nearest(word: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.5)
    return f"; did you mean {close[0]!r}?" if close else ""


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "a table"}.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{_kind(value)} ({text if len(text) <= 60 else text[:57] + '...'})"
