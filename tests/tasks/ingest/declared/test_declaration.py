"""Reading sources.toml: the issue's example parses into declarations, and every kind of mistake is refused in one
line naming the file, the source and the key, before any row is read."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tasks.ingest.declared.declaration import MAX_SOURCES_BYTES, read_declarations
from tasks.ingest.declared.formats import FORMATS
from tasks.ingest.declared.model import DeclarationError
from tasks.ingest.sources import SOURCES

# the issue's example, as written there
EXAMPLE = '''
# sources.toml beside the warehouse (or the file a setting names)
[sources.team-pairs]                         # a team's export: pairwise rows with a vote column
path = "exports/pairs.jsonl"                 # or hub_id = "org/name" (+ config, splits, revision)
format = "pairwise"                          # trl | trl-implicit | pairwise | rated | hh | auto
columns = { prompt = "question", response_a = "answer_1", response_b = "answer_2", preference = "winner" }
label = { a = "1", b = "2", tie = ["tie"], both_bad = ["neither"] }
license = "internal"

[sources.skywork]                            # TRL explicit prompt, conversational: chosen is the human's pick
hub_id = "Skywork/Skywork-Reward-Preference-80K-v0.2"
format = "trl"
license = "other"

[sources.graded]                             # N rated responses a row
path = "data/graded.parquet"
format = "rated"
columns = { prompt = "instruction", responses = "outputs", response = "text", score = "grade" }
label = { scale = [1, 10], min_gap = 2 }     # the best against each response at least 2 lower
license = "cc-by-4.0"
'''


def _read(tmp_path: Path, text: str, formats=FORMATS):
    path = tmp_path / "sources.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return read_declarations(path, formats, builtin=SOURCES)


def _refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(DeclarationError) as caught:
        _read(tmp_path, text)
    message = str(caught.value)
    assert "\n" not in message, message  # one line
    assert message.startswith(str(tmp_path / "sources.toml") + ": "), message  # naming the file
    return message


def test_the_issue_s_example_parses(tmp_path):
    found = _read(tmp_path, EXAMPLE)
    assert list(found) == ["team-pairs", "skywork", "graded"]
    team, skywork, graded = found.values()
    assert team.path == tmp_path / "exports" / "pairs.jsonl" and team.hub_id is None  # beside the TOML
    assert team.format == "pairwise" and team.license == "internal" and team.column("preference") == "winner"
    assert team.column("prompt") == "question" and team.column("id") == "id"  # an unmapped column keeps its name
    assert team.label == {"a": "1", "b": "2", "tie": ["tie"], "both_bad": ["neither"]}
    assert skywork.hub_id == "Skywork/Skywork-Reward-Preference-80K-v0.2" and skywork.path is None
    assert skywork.splits == ("train",) and skywork.revision is None and skywork.config is None
    assert graded.label == {"scale": [1, 10], "min_gap": 2} and graded.path == tmp_path / "data" / "graded.parquet"
    assert all(d.origin == (tmp_path / "sources.toml").resolve() for d in found.values())


def test_hub_keys_and_defaults(tmp_path):
    d = _read(tmp_path, '''
        [sources.mine]
        hub_id = "org/name"
        config = "default"
        splits = ["train", "test"]
        revision = "v1.0"
        license = "mit"
        description = "my pairs"
        models = { a = "model_a", b = "model_b" }
        domain = "code"
        language = "en"
        ''')["mine"]
    assert (d.hub_id, d.config, d.splits, d.revision, d.description) == ("org/name", "default", ("train", "test"),
                                                                          "v1.0", "my pairs")
    assert d.format == "auto" and d.models == {"a": "model_a", "b": "model_b"} and (d.domain, d.language) == ("code",
                                                                                                            "en")
    absolute = _read(tmp_path, f'[sources.x]\npath = "{tmp_path}/abs.jsonl.gz"\nlicense = "mit"\n')["x"]
    assert absolute.path == tmp_path / "abs.jsonl.gz"
    assert _read(tmp_path, "# nothing declared yet\n") == {}


MISTAKES = [
    # (what, the table's body, what the line must say)
    ("unknown key, nearest suggested", 'path = "a.jsonl"\nlicense = "mit"\nlisence = "mit"',
     "[sources.s] lisence: unknown key; did you mean 'license'?"),
    ("unknown key, nothing near", 'path = "a.jsonl"\nlicense = "mit"\nzzz = "red"',
     "[sources.s] zzz: unknown key (keys: path, hub_id"),
    ("wrong type of a string", 'path = "a.jsonl"\nlicense = 4', "[sources.s] license: a non-empty string, not an "
                                                                 "integer (4)"),
    ("empty string", 'path = "a.jsonl"\nlicense = " "', "[sources.s] license: a non-empty string"),
    ("splits not a list", 'hub_id = "o/n"\nsplits = "train"\nlicense = "mit"', "[sources.s] splits: a non-empty list"),
    ("splits of numbers", 'hub_id = "o/n"\nsplits = [1]\nlicense = "mit"', "[sources.s] splits: a non-empty list"),
    ("a split twice", 'hub_id = "o/n"\nsplits = ["a", "a"]\nlicense = "mit"', "[sources.s] splits: ['a', 'a'] names a "
                                                                               "split twice"),
    ("columns not a table", 'path = "a.jsonl"\nlicense = "mit"\ncolumns = "prompt"', "[sources.s] columns: a table"),
    ("a column not a string", 'path = "a.jsonl"\nformat = "trl"\nlicense = "mit"\ncolumns = { prompt = 3 }',
     "[sources.s] columns.prompt: a column name (a non-empty string), not an integer (3)"),
    ("label not a table", 'path = "a.jsonl"\nlicense = "mit"\nlabel = 3', "[sources.s] label: a table"),
    ("both path and hub_id", 'path = "a.jsonl"\nhub_id = "o/n"\nlicense = "mit"',
     "[sources.s] hub_id: give exactly one of path (a local file or folder) and hub_id (a Hub dataset), not both"),
    ("neither path nor hub_id", 'license = "mit"', "[sources.s] path: give exactly one of path"),
    ("a hub key with a local file", 'path = "a.jsonl"\nrevision = "main"\nlicense = "mit"',
     "[sources.s] revision: applies to a Hub dataset (hub_id) or a folder in its layout, not to a local file"),
    ("a config with a local file", 'path = "a.parquet"\nconfig = "dpo"\nlicense = "mit"',
     "[sources.s] config: applies to a Hub dataset (hub_id) or a folder in its layout, not to a local file"),
    ("a revision with a folder", 'path = "release/v1"\nconfig = "dpo"\nrevision = "main"\nlicense = "mit"',
     "[sources.s] revision: applies to a Hub dataset (hub_id) only, not to a folder (path): a folder has no "
     "commits"),
    ("not a Hub id", 'hub_id = "just-a-name"\nlicense = "mit"', "[sources.s] hub_id: 'just-a-name' is not a Hub "
                                                                "dataset id ORG/NAME"),
    ("a revision with a space", 'hub_id = "o/n"\nrevision = "my branch"\nlicense = "mit"', "[sources.s] revision:"),
    ("a file the ingest cannot read", 'path = "a.csv"\nlicense = "mit"', "[sources.s] path: 'a.csv' is not a file the "
                                                                         "ingest reads"),
    ("no license", 'path = "a.jsonl"', "[sources.s] license: required"),
    ("redistribute not a boolean", 'path = "a.jsonl"\nlicense = "mit"\nredistribute = "no"',
     "[sources.s] redistribute: true or false, not "),
    ("unknown format, nearest suggested", 'path = "a.jsonl"\nformat = "pairwize"\nlicense = "mit"',
     "[sources.s] format: unknown format 'pairwize'; did you mean 'pairwise'?"),
    # then the format's own check, in the same line's shape
    ("a column the format does not have", 'path = "a.jsonl"\nformat = "trl"\nlicense = "mit"\n'
                                          'columns = { promt = "q" }', "[sources.s] columns.promt: "),
    ("a label rule for a format without one", 'path = "a.jsonl"\nformat = "trl"\nlicense = "mit"\nlabel = { a = "1" }',
     "[sources.s] label.a: "),
    ("a label key the format does not have", 'path = "a.jsonl"\nformat = "pairwise"\nlicense = "mit"\n'
                                             'label = { ties = ["t"] }', "[sources.s] label.ties: "),
    ("two roles given one column", 'path = "a.jsonl"\nformat = "trl"\nlicense = "mit"\n'
                                   'columns = { chosen = "x", rejected = "x" }', "[sources.s] columns.rejected: "),
    ("auto: a column no format has", 'path = "a.jsonl"\nlicense = "mit"\ncolumns = { respons = "r" }',
     "[sources.s] columns.respons: not a column of any format; did you mean 'response'?"),
]


@pytest.mark.parametrize(("what", "body", "said"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_each_mistake_is_refused_in_one_line_naming_the_source_and_the_key(tmp_path, what, body, said):
    message = _refused(tmp_path, "[sources.s]\n" + body + "\n")
    assert said in message, message


@pytest.mark.parametrize(("table", "said"), [
    ("helpsteer3", "[sources.helpsteer3] name: 'helpsteer3' is the name of a built-in source"),
    ("rm-bench", "[sources.rm-bench] name: 'rm-bench' is the name of a built-in source"),
    ("eval", "[sources.eval] name: 'eval' is the name of a built-in source"),
    ('"Team Pairs"', "[sources.Team Pairs] name: not a valid source name"),
    ('"a=b"', "[sources.a=b] name: not a valid source name"),
    ('"a.b"', "[sources.a.b] name: not a valid source name"),
])
def test_a_name_that_clashes_or_is_not_valid_is_refused(tmp_path, table, said):
    assert said in _refused(tmp_path, f'[sources.{table}]\npath = "a.jsonl"\nlicense = "mit"\n')


def test_the_file_holds_sources_tables_only(tmp_path):
    assert "policy: unknown top-level key" in _refused(tmp_path, '[policy]\nmin_abs_margin = 1\n')
    assert "soruces: unknown top-level key; the file holds [sources.NAME] tables only; did you mean 'sources'?" in \
        _refused(tmp_path, '[soruces.a]\npath = "a.jsonl"\n')
    assert "not an array of tables [[sources]]" in _refused(tmp_path, '[[sources]]\npath = "a.jsonl"\n')
    assert "[sources.a] name: a [sources.a] table, not a string" in _refused(tmp_path, '[sources]\na = "x"\n')
    assert "not valid TOML" in _refused(tmp_path, '[sources.a]\npath = \n')


def test_several_mistakes_name_the_first_and_count_the_rest(tmp_path):
    message = _refused(tmp_path, '[sources.a]\npath = "a.jsonl"\n[sources.b]\nlicense = "mit"\n'
                                 '[sources.c]\npath = "c.jsonl"\nlicense = "mit"\n[sources.d]\nformat = 3\n')
    assert "[sources.a] license: required" in message and message.endswith("(and 2 more sources with a mistake)")


def test_only_a_regular_utf8_file_under_the_cap_is_read(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big.toml").write_bytes(b"#" * MAX_SOURCES_BYTES + b"\n")
    (tmp_path / "latin1.toml").write_bytes('[sources.a]\ndescription = "caf\xe9"\n'.encode("latin-1"))
    for path, said in ((tmp_path / "fifo", "not a regular file"), (Path("/dev/zero"), "not a regular file"),
                       (tmp_path, "not a regular file"), (tmp_path / "big.toml", f"over {MAX_SOURCES_BYTES} bytes"),
                       (tmp_path / "latin1.toml", "not UTF-8 text (byte 30)"),
                       (tmp_path / "none.toml", "No such file or directory")):
        with pytest.raises(DeclarationError) as caught:
            read_declarations(path, FORMATS, builtin=SOURCES)
        assert str(caught.value).startswith(f"{path}: cannot read the sources: {said}"), str(caught.value)


def test_the_readme_s_example_of_each_format_parses(tmp_path):
    import re

    readme = (Path(__file__).resolve().parents[4] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"\*\*Bring your own preference data\*\*.*?```toml\n(.*?)```", readme, re.S).group(1)
    found = _read(tmp_path, block)
    assert sorted(d.format for d in found.values()) == sorted(f for f in FORMATS if f != "helpsteer3")


def test_a_folder_in_the_hub_s_layout_takes_a_config_and_defaults_to_every_split(tmp_path):
    """`path` naming a folder (a published version's, as the Hub holds it) reads `config` of it; without `splits`,
    every split the config has (told by `datasets` from the folder's card at read time)."""
    (tmp_path / "release" / "v1").mkdir(parents=True)
    found = _read(tmp_path, """
        [sources.again]
        path = "release/v1"
        config = "dpo"
        format = "trl"
        license = "cc-by-4.0"

        [sources.again-test]
        path = "not-yet-there"
        config = "rm"
        splits = ["test"]
        license = "cc-by-4.0"
    """)
    assert found["again"].path == tmp_path / "release" / "v1" and found["again"].config == "dpo"
    assert found["again"].splits == () and found["again"].hub_id is None
    assert found["again-test"].splits == ("test",)  # no suffix and nothing there yet: a folder to be


def test_a_file_without_a_suffix_the_ingest_reads_is_refused(tmp_path):
    (tmp_path / "rows").write_text("{}\n")
    message = _refused(tmp_path, '[sources.s]\npath = "rows"\nlicense = "mit"\n')
    assert "[sources.s] path: 'rows' is not a file the ingest reads" in message and "nor a folder" in message


@pytest.mark.parametrize("nested", [
    "label = { a = " + "[" * 1000 + "]" * 1000 + " }",  # past the parser's stack
    "label = " + "{ a = " * 5000 + "1" + " }" * 5000,
    "label = { a = " + "[" * 40 + "1" + "]" * 40 + " }",  # within the stack, past any declaration's depth
])
def test_a_file_nested_past_any_declaration_is_one_line(tmp_path, nested):
    message = _refused(tmp_path, f"[sources.x]\npath = \"a.jsonl\"\nlicense = \"mit\"\n{nested}\n")
    assert message.endswith("not valid TOML: nested deeper than 16 levels"), message


def test_a_sources_file_that_is_a_symlink_loop_is_one_line(tmp_path):
    from common.settings import Settings
    from tasks.ingest.sources import get_source

    (tmp_path / "loop.toml").symlink_to(tmp_path / "loop.toml")
    for named in (tmp_path / "loop.toml", None):  # named by the setting, or the default beside the warehouse
        if named is None:
            (tmp_path / "sources.toml").symlink_to(tmp_path / "sources.toml")
        s = Settings(warehouse=tmp_path / "w.duckdb", sources_file=named)
        with pytest.raises(DeclarationError) as caught:
            get_source("mine", settings=s)
        assert str(caught.value).endswith(": cannot read the sources: Too many levels of symbolic links")


@pytest.mark.parametrize(("line", "said"), [
    ('license = "\u200b"', "license: a non-empty string, not a string ('\\u200b')"),
    ('license = "\ufeff \u2060"', "license: a non-empty string"),
    ('description = "\\u001b[31mred\\u001b[0m"', "description: one line of plain text, not one holding the control "
                                                 "character \\x1b"),
    ('description = "two\\nlines"', "description: one line of plain text, not one holding the control character \\n"),
    ('domain = "\\u202egnp.exe"', "domain: one line of plain text, not one holding the control character \\u202e"),
])
def test_text_that_is_invisible_or_holds_control_characters_is_refused(tmp_path, line, said):
    base = {"license": 'license = "mit"'}
    key = line.split(" ", 1)[0]
    text = f'[sources.x]\npath = "a.jsonl"\n{base.get("license") if key != "license" else ""}\n{line}\n'
    message = _refused(tmp_path, text)
    assert f"[sources.x] {said}" in message, message


def test_a_file_of_thousands_of_tables_is_refused_fast_and_a_thousand_read_fast(tmp_path):
    import time

    from tasks.ingest.declared.declaration import MAX_DECLARED_SOURCES
    from tasks.ingest.declared.registry import declared_sources

    table = '[sources.s{}]\npath = "a{}.jsonl"\nformat = "trl"\nlicense = "mit"\n'
    many = "".join(table.format(i, i) for i in range(20_000))[:MAX_SOURCES_BYTES]
    started = time.process_time()
    message = _refused(tmp_path, many[: many.rindex("[sources")])
    assert f"[sources.NAME] tables: a sources file declares at most {MAX_DECLARED_SOURCES:,} sources" in message
    (tmp_path / "k.toml").write_text("".join(table.format(i, i) for i in range(MAX_DECLARED_SOURCES)))
    from common.settings import Settings

    found = declared_sources(Settings(warehouse=tmp_path / "w.duckdb", sources_file=tmp_path / "k.toml"), SOURCES)
    assert len(found) == MAX_DECLARED_SOURCES and found["s7"].name == "s7"  # a Source is built when asked for
    assert time.process_time() - started < 10  # about 1 s: was 90 s of CPU for 20,000 tables, each built
