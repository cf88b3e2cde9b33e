"""A declaration becomes an ordinary `Source`, found by the registry from the file the settings name; a local
file is read as `--path FILE` is, a Hub dataset as a built-in Hub source is (offline: a stand-in for the Hub's
reader, as the reader's own tests use), and a format `auto` is told from the first batch's columns."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from common.errors import InvalidInputError, NotFoundError
from common.settings import Settings
from schemas.pair import CandidatePair
from tasks.ingest.context import IngestRun
from tasks.ingest.declared import registry
from tasks.ingest.declared.formats import FORMATS
from tasks.ingest.declared.model import DeclarationError
from tasks.ingest.declared.source import DeclaredColumnsError, declaration_of, format_name, is_settled
from tasks.ingest.prepare import check_input_file, prepare_batch
from tasks.ingest.read import RawBatch
from tasks.ingest.sources import SOURCES, AdapterContext, all_sources, get_source


def _rows(n: int, prompt="prompt", chosen="chosen", rejected="rejected") -> list[dict]:
    return [{prompt: f"question {i}?", chosen: f"a good answer {i}", rejected: f"a worse answer {i}"}
            for i in range(n)]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _settings(tmp_path: Path, toml: str, **kw) -> Settings:
    (tmp_path / "sources.toml").write_text(toml, encoding="utf-8")
    return Settings(warehouse=tmp_path / "warehouse.duckdb", **kw)


LOCAL = '[sources.mine]\npath = "exports/mine.jsonl"\nformat = "trl"\nlicense = "internal"\n' \
        'columns = { prompt = "question" }\n'


def test_a_declared_local_file_is_a_source_like_any_other(tmp_path, settings):
    s = _settings(tmp_path, LOCAL)
    src = get_source("mine", kind="pairs", settings=s)
    assert (src.name, src.kind, src.license, src.local_path) == ("mine", "pairs", "internal",
                                                                 tmp_path / "exports" / "mine.jsonl")
    assert src.hub_id == str(tmp_path / "exports" / "mine.jsonl") and src.splits == ("train",)
    assert format_name(src) == "trl" and declaration_of(src).origin == (tmp_path / "sources.toml").resolve()
    assert {"question", "chosen", "rejected"} <= set(src.raw_schema.columns) and src.synth is not None
    assert not src.names_models and src.clear_label == 1.0
    row = {"question": "why?", "chosen": "because", "rejected": "no"}
    [pair] = src.adapt(row, AdapterContext(settings, "train", "t:1"))
    assert isinstance(pair, CandidatePair) and pair.source == "mine" and pair.history[-1]["content"] == "why?"
    assert src.source_id(row) == src.source_id(dict(row))
    assert list(all_sources(s)) == [*SOURCES, "mine"]


def test_the_settings_name_the_file_and_only_a_named_file_must_exist(tmp_path):
    other = tmp_path / "elsewhere" / "declared.toml"
    other.parent.mkdir()
    other.write_text(LOCAL.replace("mine", "theirs"), encoding="utf-8")
    s = _settings(tmp_path, LOCAL, sources_file=other)
    assert get_source("theirs", settings=s).local_path == other.parent / "exports" / "theirs.jsonl"
    with pytest.raises(InvalidInputError, match="unknown source 'mine'; known: .*theirs"):
        get_source("mine", settings=s)  # the file beside the warehouse is not read when a setting names another
    with pytest.raises(NotFoundError, match="none.toml: no such file"):
        get_source("theirs", settings=Settings(warehouse=tmp_path / "w.duckdb", sources_file=tmp_path / "none.toml"))
    bare = Settings(warehouse=tmp_path / "nowhere" / "w.duckdb")  # no sources.toml beside it: nothing declared
    assert all_sources(bare) == SOURCES
    with pytest.raises(InvalidInputError, match="unknown source 'mine'"):
        get_source("mine", settings=bare)


def test_a_built_in_name_never_reads_the_file(tmp_path):
    s = _settings(tmp_path, "[sources.broken\n")
    assert get_source("helpsteer3", kind="pairs", settings=s) is SOURCES["helpsteer3"]
    with pytest.raises(DeclarationError, match="not valid TOML"):
        get_source("mine", settings=s)  # a name that is not built-in: the file's mistake is the answer


def test_the_file_is_read_again_when_it_changes(tmp_path):
    s = _settings(tmp_path, LOCAL)
    assert get_source("mine", settings=s).license == "internal"
    (tmp_path / "sources.toml").write_text(LOCAL.replace("internal", "cc-by-4.0") + "# longer\n", encoding="utf-8")
    os.utime(tmp_path / "sources.toml", ns=(1, 1))
    assert get_source("mine", settings=s).license == "cc-by-4.0"


def test_the_facts_it_stores_come_from_the_declaration(tmp_path):
    """What travels with the pairs (tasks/ingest/source_facts.py): the format's label meaning and clear label, the
    license, and the declaration itself as plain JSON, so a later run without the file reads the pairs as meant."""
    s = _settings(tmp_path, LOCAL)
    source = get_source("mine", settings=s)
    facts = source.facts()
    assert facts.license == "internal" and facts.clear_label == 1.0
    assert not facts.human_labels  # unless the declaration says people gave them
    s = _settings(tmp_path, LOCAL + "human_labels = true\n")
    assert get_source("mine", settings=s).facts().human_labels
    fmt = FORMATS[source.extra["format"].name]
    assert facts.label_meaning == fmt.label_meaning(source.extra["declaration"])
    assert facts.declaration["name"] == "mine" and json.loads(json.dumps(facts.declaration)) == facts.declaration
    assert facts.declaration["path"] == str(source.local_path)


def test_a_declaration_saying_redistribute_false_makes_its_license_restricted(tmp_path):
    from tasks.publish.summary import restricted_license

    open_ = LOCAL.replace('"internal"', '"cc-by-4.0"')
    plain = get_source("mine", settings=_settings(tmp_path, open_)).facts()
    assert "redistribute" not in plain.declaration  # the default is not stored: older declarations read the same
    assert not restricted_license(plain.license, plain.declaration)
    said = get_source("mine", settings=_settings(tmp_path, open_ + "redistribute = false\n")).facts()
    assert said.declaration["redistribute"] is False and restricted_license(said.license, said.declaration)


def test_an_ingest_of_a_declared_local_source_reads_its_file(tmp_path):
    s = _settings(tmp_path, LOCAL)
    run = IngestRun.of("mine", warehouse=str(s.warehouse), sources_file=str(tmp_path / "sources.toml"))
    assert run.path == tmp_path / "exports" / "mine.jsonl" and run.file == str(run.path)
    assert run.flow_parameters()["sources_file"] == str(tmp_path / "sources.toml")
    assert IngestRun.of(**run.flow_parameters()) == run
    other = IngestRun.of("mine", path=tmp_path / "other.jsonl", sources_file=str(tmp_path / "sources.toml"))
    assert other.path == tmp_path / "other.jsonl"  # --path still wins


def test_a_missing_column_is_refused_at_the_first_batch_naming_it_and_the_columns_seen(tmp_path, settings):
    s = _settings(tmp_path, LOCAL)
    src = get_source("mine", settings=s)
    data = _jsonl(tmp_path / "exports" / "mine.jsonl", _rows(3))  # `prompt`, where the declaration says `question`
    with pytest.raises(DeclaredColumnsError) as caught:
        check_input_file(src, data, 100)
    message = str(caught.value)
    assert "'question'" in message and "its columns: chosen, prompt, rejected" in message and "[sources.mine]" in message
    batch = RawBatch("train", _rows(2), ["a:1", "a:2"])
    with pytest.raises(DeclaredColumnsError, match="'question'"):  # the flow's first batch: the same refusal
        prepare_batch(batch, src, settings, "a.jsonl", first=True)
    _jsonl(data, _rows(3, prompt="question"))
    check_input_file(src, data, 100)  # the declared columns: no refusal


AUTO = '[sources.mine]\npath = "mine.jsonl"\nlicense = "mit"\n'


def test_auto_tells_the_format_from_the_first_batch_s_columns(tmp_path, settings):
    src = get_source("mine", settings=_settings(tmp_path, AUTO))
    assert format_name(src) == "auto" and not is_settled(src) and src.synth is None
    told = registry.settled(src, _rows(3))
    assert format_name(told) == "trl" and is_settled(told) and registry.chosen_format(told) == {
        "format": "trl", "format_detected": True}
    assert isinstance(next(iter(told.adapt(_rows(1)[0], AdapterContext(settings, "train", "t")))), CandidatePair)
    implicit = registry.settled(src, [{"chosen": "x", "rejected": "y"}])
    assert format_name(implicit) == "trl-implicit"
    with pytest.raises(DeclarationError, match=r"\[sources.mine\] format: auto, and no format fits the columns a, b"):
        registry.settled(src, [{"a": 1, "b": 2}])
    # renamed columns count under the declaration's names
    mapped = get_source("mine", settings=_settings(tmp_path, AUTO + 'columns = { prompt = "question" }\n'))
    assert format_name(registry.settled(mapped, _rows(2, prompt="question"))) == "trl"


def test_with_format_settled_hands_on_every_batch(tmp_path):
    src = get_source("mine", settings=_settings(tmp_path, AUTO))
    batches = [RawBatch("train", _rows(2), ["1", "2"]), RawBatch("train", _rows(1), ["3"])]
    told, rest = registry.with_format_settled(src, iter(batches))
    assert format_name(told) == "trl" and list(rest) == batches
    fixed = get_source("helpsteer3")
    same, rest = registry.with_format_settled(fixed, iter(batches))
    assert same is fixed and list(rest) == batches and registry.chosen_format(fixed) == {}
    empty, rest = registry.with_format_settled(src, iter([]))
    assert empty is src and list(rest) == []


def test_synthetic_rows_of_a_declared_source_are_under_its_column_names(tmp_path, monkeypatch, settings):
    from common.settings import get_settings
    from tasks.ingest.synth import synth_class, synth_kinds, synth_lines

    monkeypatch.setenv("CURATE_SOURCES_FILE", str(tmp_path / "sources.toml"))
    get_settings.cache_clear()
    try:
        _settings(tmp_path, LOCAL + AUTO.replace("mine", "unsure"))
        assert "mine" in synth_kinds() and "unsure" not in synth_kinds()
        with pytest.raises(InvalidInputError, match="no synthetic rows of 'unsure': its format is auto"):
            synth_class("unsure")
        lines = list(synth_lines("mine", 20, seed=5, bad_rate=0, exact_dup_rate=0, near_dup_rate=0))
        assert lines == list(synth_lines("mine", 20, seed=5, bad_rate=0, exact_dup_rate=0, near_dup_rate=0))  # seeded
        rows = [json.loads(line) for line in lines]
        assert all(set(r) == {"question", "chosen", "rejected"} for r in rows)
        src = get_source("mine")
        made = [p for r in rows for p in src.adapt(r, AdapterContext(settings, "train", "t"))]
        assert len(made) == 20 and all(isinstance(p, CandidatePair) for p in made)
    finally:
        monkeypatch.delenv("CURATE_SOURCES_FILE")
        get_settings.cache_clear()


HUB = '[sources.hubbed]\nhub_id = "org/pairs"\nformat = "trl"\nlicense = "mit"\nsplits = ["train", "test"]\n'
SHA = "0123456789abcdef0123456789abcdef01234567"


def _fake_hub(monkeypatch, rows_by_split: dict[str, list[dict]]) -> list[dict]:
    """`datasets.load_dataset` answering from memory (offline), as the Hub reader's own tests do; returns the calls."""
    import datasets

    calls: list[dict] = []

    class Stream:
        def __init__(self, rows):
            self.rows = rows

        def skip(self, n):
            return Stream(self.rows[n:])

        def iter(self, batch_size):
            for i in range(0, len(self.rows), batch_size):
                chunk = self.rows[i:i + batch_size]
                yield {k: [r[k] for r in chunk] for k in chunk[0]}

    def load(path, name=None, **kw):
        calls.append({"path": path, "name": name, **kw})
        return Stream(rows_by_split[kw["split"]])

    monkeypatch.setattr(datasets, "load_dataset", load)
    return calls


@pytest.mark.prefect
def test_a_declared_hub_source_is_read_and_pinned_like_a_built_in_one(tmp_path, monkeypatch):
    from flows.ingest import ingest
    from warehouse.store import Warehouse

    s = _settings(tmp_path, HUB + f'revision = "{SHA}"\n')
    calls = _fake_hub(monkeypatch, {"train": _rows(30), "test": _rows(5)})
    summary = ingest("hubbed", warehouse=str(s.warehouse), sources_file=str(tmp_path / "sources.toml"))
    assert summary["read"] == 35 and summary["source_revision"].startswith(f"{SHA}+decl:") and summary["format"] == "trl"
    assert summary["location"] == "hf://datasets/org/pairs" and summary["format_detected"] is False
    assert [(c["path"], c["split"], c["revision"]) for c in calls] == [("org/pairs", "train", SHA),
                                                                       ("org/pairs", "test", SHA)]
    with Warehouse(s.warehouse, read_only=True) as wh:
        assert wh.ingest.source_pin("hubbed") == SHA
    again = ingest("hubbed", warehouse=str(s.warehouse), sources_file=str(tmp_path / "sources.toml"))
    assert again["note"].startswith("unchanged") and len(calls) == 2  # read in full: nothing read again


@pytest.mark.prefect
def test_a_declared_branch_is_resolved_once_then_pinned(tmp_path, monkeypatch):
    from flows.ingest import ingest
    from tasks.ingest import revisions

    s = _settings(tmp_path, HUB + 'revision = "v2"\n')
    asked: list[tuple[str, str]] = []
    monkeypatch.setattr(revisions, "resolve_hub_revision", lambda hub_id, ref: asked.append((hub_id, ref)) or SHA)
    _fake_hub(monkeypatch, {"train": _rows(4), "test": _rows(1)})
    first = ingest("hubbed", warehouse=str(s.warehouse), sources_file=str(tmp_path / "sources.toml"))
    second = ingest("hubbed", warehouse=str(s.warehouse), sources_file=str(tmp_path / "sources.toml"))
    assert first["source_revision"] == second["source_revision"] and asked == [("org/pairs", "v2")]
    assert first["source_revision"].startswith(f"{SHA}+decl:")


@pytest.mark.prefect
def test_an_auto_source_says_which_format_it_chose(tmp_path):
    from flows.ingest import ingest

    s = _settings(tmp_path, AUTO)
    _jsonl(tmp_path / "mine.jsonl", _rows(12))
    summary = ingest("mine", warehouse=str(s.warehouse), sources_file=str(tmp_path / "sources.toml"))
    assert summary["format"] == "trl" and summary["format_detected"] is True
    assert summary["read"] == 12 and summary["new_pairs"] == 12
    assert summary["location"] == str((tmp_path / "mine.jsonl").resolve())


PAIRWISE = ('[sources.votes]\npath = "votes.jsonl"\nformat = "pairwise"\nlicense = "internal"\n'
            'columns = {{ preference = "{column}" }}\nlabel = {{ a = "{a}", b = "{b}" }}\n')


@pytest.mark.prefect
def test_a_changed_declaration_of_an_unchanged_file_is_read_again(tmp_path):
    """The declaration's digest is part of the revision: a fixed label rule re-reads the file without force; a
    source none of whose rows landed takes any new meaning, one with pairs is refused a new meaning."""
    from curator.noop import ingest_noop
    from flows.ingest import ingest
    from tasks.ingest.source_facts import SourceMeaningChangedError

    rows = [{"prompt": f"question {i}?", "response_a": f"answer a {i}", "response_b": f"answer b {i}",
             "vote": "1" if i % 2 else "2", "again": "1" if i % 2 else "2"} for i in range(10)]
    _jsonl(tmp_path / "votes.jsonl", rows)
    toml = str(tmp_path / "sources.toml")

    def run(column: str, a: str, b: str) -> dict:
        s = _settings(tmp_path, PAIRWISE.format(column=column, a=a, b=b))
        return ingest_noop(IngestRun.of("votes", warehouse=s.warehouse, sources_file=toml)) or \
            ingest("votes", warehouse=str(s.warehouse), sources_file=toml)

    wrong = run("vote", "a", "b")  # a label rule that fits no row: every row quarantined
    assert wrong["quarantined"] == {"label_outside_declared_scale": 10} and wrong["new_pairs"] == 0
    assert "unchanged" in run("vote", "a", "b")["note"]  # the same declaration, the same file: nothing read
    fixed = run("vote", "1", "2")  # no pair landed under the old rule: any new one is taken
    assert fixed["new_pairs"] == 10 and fixed["source_revision"] != wrong["source_revision"]
    renamed = run("again", "1", "2")  # another column, the same meaning: read again, the same pairs
    assert "note" not in renamed or "unchanged" not in renamed["note"]
    assert renamed["read"] == 10 and renamed["new_pairs"] == 0
    with pytest.raises(SourceMeaningChangedError):
        run("vote", "2", "1")  # pairs landed under "a = 1": a new meaning of the labels is refused
