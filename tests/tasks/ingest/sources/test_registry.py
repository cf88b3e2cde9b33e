"""The registry: a source's facts are declared on its `Source` and read through the registry, and nothing outside
the sources package knows a source by name."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

from schemas.pair import MODEL_A, MODEL_B, CandidatePair
from tasks.ingest.sources import PAIR_SOURCES, SOURCES, AdapterContext, clear_label_of, get_source
from tasks.ingest.sources.base import DEFAULT_CLEAR_LABEL
from tasks.ingest.synth import synth_lines

REPO = Path(__file__).resolve().parents[4]


def test_clear_label_of_reads_what_the_source_declares(monkeypatch):
    made_up = dataclasses.replace(get_source("helpsteer3"), name="made-up", clear_label=0.75)
    monkeypatch.setitem(SOURCES, "made-up", made_up)
    assert clear_label_of("made-up") == 0.75
    assert all(clear_label_of(name) == SOURCES[name].clear_label for name in PAIR_SOURCES)
    assert clear_label_of("a-source-another-build-wrote") == DEFAULT_CLEAR_LABEL


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


def test_nothing_outside_the_sources_package_names_a_source():
    """No string in the stages after ingest is a source's name: what they need of a source, they read through the
    registry. (An export format named like a source is the format, not the source: its module may say it.)"""
    from tasks.curate.exports import EXPORTS

    exports_module = Path("tasks/curate/exports.py")
    found = []
    for folder in ("tasks/curate", "tasks/review", "tasks/judge", "tasks/publish", "tasks/evaluate", "warehouse",
                   "flows"):
        for path in (REPO / folder).rglob("*.py"):
            rel = path.relative_to(REPO)
            allowed = set(EXPORTS) if rel == exports_module else set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in set(PAIR_SOURCES) - allowed:
                    found.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not found, found
