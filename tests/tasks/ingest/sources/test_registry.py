"""The registry: a source's facts (its synthetic rows too) are declared on its `Source` and read through the
registry, and nothing outside a source's own module knows it by name."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from common.errors import InvalidInputError
from schemas.pair import MODEL_A, MODEL_B, CandidatePair
from tasks.ingest.sources import PAIR_SOURCES, SOURCES, AdapterContext, get_source, known_facts
from tasks.ingest.sources.base import DEFAULT_CLEAR_LABEL
from tasks.ingest.synth import synth_class, synth_kinds, synth_lines
from tests.registry_names import allow, module_of, names_said


def test_a_source_s_facts_are_what_it_declares(monkeypatch):
    made_up = dataclasses.replace(get_source("helpsteer3"), name="made-up", clear_label=0.75, names_models=True,
                                  label_meaning=None, human_labels=False)
    monkeypatch.setitem(SOURCES, "made-up", made_up)
    facts = known_facts()
    assert facts["made-up"].clear_label == 0.75 and facts["made-up"].names_models and not facts["made-up"].human_labels
    assert facts["made-up"].label_meaning["clear"] == "|label| >= 0.75"  # the default meaning says its clear rule
    assert facts["made-up"].declaration is None and facts["made-up"].license == made_up.license
    for name in PAIR_SOURCES:
        s, f = SOURCES[name], facts[name]
        assert (f.clear_label, f.names_models, f.license, f.description) == (s.clear_label, s.names_models, s.license,
                                                                            s.description), name
        assert f"|label| >= {s.clear_label:g}" in f.label_meaning["clear"], name  # its stated rule is its clear label
        assert f.label_meaning["scale"] and f.label_meaning["direction"] and f.label_meaning["labelled_by"], name
    assert facts["helpsteer3"].human_labels and not facts["ultrafeedback"].human_labels  # GPT-4 rated it
    assert not any(f.human_labels for f in facts.values() if SOURCES[f.name].kind == "eval_prompts")
    assert DEFAULT_CLEAR_LABEL == 1.0


def test_every_pair_source_declares_its_facts():
    assert set(PAIR_SOURCES) == {n for n, s in SOURCES.items() if s.kind == "pairs"} and "ultrafeedback" in PAIR_SOURCES
    for name in PAIR_SOURCES:
        s = SOURCES[name]
        assert s.license and s.hub_id and s.splits and s.clear_label > 0 and s.raw_schema.columns, name


def _samples() -> dict[str, list[dict]]:
    """Good raw rows of every source that names its models."""
    def synthetic(kind):
        return [json.loads(line) for line in synth_lines(kind, 30, seed=4, bad_rate=0, exact_dup_rate=0,
                                                         near_dup_rate=0)]

    lmsys = {"question_id": "q1", "model_a": "vicuna-13b", "model_b": "alpaca-13b", "winner": "model_a",
             "conversation_a": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
             "conversation_b": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}]}
    return {"arena": synthetic("arena"), "ultrafeedback": synthetic("ultrafeedback"), "chatbot-arena": [lmsys]}


def test_a_source_that_names_models_puts_them_under_the_pair_s_model_keys(settings):
    samples = _samples()
    naming = {name for name in PAIR_SOURCES if SOURCES[name].names_models}
    assert naming <= set(samples), "a source that names its models needs a sample row here"
    for name in naming:
        made = [r for row in samples[name] for r in SOURCES[name].adapt(row, AdapterContext(settings, "train", "t"))]
        pairs = [p for p in made if isinstance(p, CandidatePair)]
        assert pairs, name
        assert all(isinstance(p.metadata.get(MODEL_A), str) and isinstance(p.metadata.get(MODEL_B), str)
                   for p in pairs), name


def test_nothing_outside_a_source_s_own_module_names_it():
    """No string of any package is a source's name but in the source's own module: what the rest needs of a source
    (its synthetic rows too), it reads through the registry. Allowed besides: an export format named like a source
    (the format, not the source), a declared source's format named like one (the shape, not the source: where
    formats are listed and its own module), a benchmark's module saying its evaluation set's name, and the demo's
    choice of data (`DEMO_*` in curator/)."""
    from tasks.curate.exports import EXPORTS
    from tasks.evaluate.benchmarks import BENCHMARKS
    from tasks.ingest.declared.formats import FORMATS

    formats_listed = ("tasks/ingest/declared/model.py", "tasks/ingest/declared/formats/__init__.py")
    allowed = allow(*[(module_of(s.source_id), name) for name, s in SOURCES.items()],
                    *[("tasks/curate/exports.py", name) for name in EXPORTS],
                    *[(where, name) for name, f in FORMATS.items()
                      for where in (*formats_listed, module_of(type(f).raw_schema))],
                    *[(module_of(b.comparisons), name) for name, b in BENCHMARKS.items()])
    assert set(allowed) >= {"tasks/ingest/sources/helpsteer3.py", "tasks/ingest/sources/eval_sets.py"}
    found = names_said(SOURCES, allowed)
    assert not found, found


def test_the_guard_finds_a_name_anywhere_but_where_it_is_allowed(tmp_path):
    files = {"tasks/ingest/synth.py": 'KIND = "made-up"\n',  # the package of sources is no exception
             "tasks/ingest/sources/made_up.py": 'NAME = "made-up"\n',
             "curator/cli.py": 'DEMO_SOURCE = "made-up"\nHELP = {"k": "made-up"}\n',
             "flows/f.py": 'def f(x="made-up"):\n    """made-up"""\n'}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = names_said({"made-up"}, allow(("tasks/ingest/sources/made_up.py", "made-up")), tmp_path,
                       ["tasks", "curator", "flows"])
    assert sorted(found) == ["curator/cli.py:2 'made-up'", "flows/f.py:1 'made-up'", "flows/f.py:2 'made-up'",
                             "tasks/ingest/synth.py:1 'made-up'"]


def test_every_source_with_synthetic_rows_writes_rows_its_adapter_takes(settings):
    """`curate synth` lists what the registry declares, and each declared shape is one its own adapter reads."""
    kinds = synth_kinds()
    assert set(kinds) == {name for name, s in SOURCES.items() if s.synth is not None} >= {"helpsteer3", "arena"}
    for kind in kinds:
        rows = [json.loads(line) for line in synth_lines(kind, 40, seed=2, bad_rate=0, exact_dup_rate=0,
                                                         near_dup_rate=0)]
        source = SOURCES[kind]
        source.raw_schema.validate(pd.DataFrame(rows))
        made = [r for row in rows for r in source.adapt(row, AdapterContext(settings, "train", "t"))]
        assert sum(isinstance(p, CandidatePair) for p in made) >= 30, kind
    with pytest.raises(InvalidInputError, match="no synthetic rows of 'chatbot-arena'"):
        synth_class("chatbot-arena")
