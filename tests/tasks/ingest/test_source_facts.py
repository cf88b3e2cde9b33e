"""A source's facts: stored as JSON, their meaning apart from what only describes them, a change of meaning refused
in one line naming old and new, and the facts a reader gets for a source the warehouse holds none for."""

from __future__ import annotations

import dataclasses

import pytest

from common.errors import InvalidInputError
from tasks.ingest.source_facts import (
    DEFAULT_CLEAR_LABEL,
    SourceFacts,
    SourceMeaningChangedError,
    assumed,
    described_changes,
    facts_changes,
    facts_in,
    meaning_changed,
    record_facts,
    resolve,
)
from warehouse.store import Warehouse

FACTS = SourceFacts("s", clear_label=2.0, names_models=True, license="cc-by-4.0", description="d",
                    label_meaning={"scale": "-3..3", "clear": "|label| >= 2"}, declaration={"format": "pairwise"})


def test_the_stored_form_reads_back_whole():
    again = SourceFacts.from_json(FACTS.to_json())
    assert again == dataclasses.replace(FACTS, origin="warehouse")
    assert "origin" not in FACTS.to_json()
    with pytest.raises(InvalidInputError, match="not JSON"):
        dataclasses.replace(FACTS, declaration={"path": object()}).to_json()


def test_the_meaning_digest_follows_the_meaning_only():
    digest = FACTS.meaning_digest()
    for descriptive in ({"license": "mit"}, {"description": "other"}, {"declaration": None}, {"origin": "x"}):
        assert dataclasses.replace(FACTS, **descriptive).meaning_digest() == digest, descriptive
    for meaning in ({"clear_label": 1.0}, {"names_models": False}, {"human_labels": False},
                    {"label_meaning": {"scale": "-1..1", "clear": "|label| >= 2"}}):
        assert dataclasses.replace(FACTS, **meaning).meaning_digest() != digest, meaning


def test_a_changed_meaning_names_what_differs_stored_value_first():
    new = dataclasses.replace(FACTS, clear_label=3.0, names_models=False,
                              label_meaning={"scale": "-3..3", "clear": "|label| >= 3", "tie": 0})
    refused = meaning_changed(FACTS, new)
    said = str(refused)
    assert isinstance(refused, SourceMeaningChangedError) and isinstance(refused, InvalidInputError)
    assert "\n" not in said and said.startswith("source 's' means something else")
    assert "clear_label 2.0 -> 3.0" in said and "names_models true -> false" in said
    assert 'label_meaning.clear "|label| >= 2" -> "|label| >= 3"' in said and "label_meaning.tie null -> 0" in said
    assert "scale" not in said and "license" not in said
    assert meaning_changed(FACTS, dataclasses.replace(FACTS, license="mit", description="x")) is None
    assert described_changes(FACTS, dataclasses.replace(FACTS, license="mit")) == ['license "cc-by-4.0" -> "mit"']


def test_a_reader_gets_stored_facts_then_this_build_s_then_the_defaults():
    stored = {"s": dataclasses.replace(FACTS, origin="warehouse")}
    known = {"s": dataclasses.replace(FACTS, clear_label=9.0), "k": SourceFacts("k", clear_label=2.0)}
    got = resolve(stored, known, ["s", "k", "u"])
    assert got["s"].clear_label == 2.0 and got["s"].origin == "warehouse"  # stored wins over this build's
    assert got["k"].clear_label == 2.0 and got["k"].origin == "this build"
    assert got["u"] == assumed("u") and got["u"].clear_label == DEFAULT_CLEAR_LABEL and got["u"].origin == "assumed"
    assert facts_in(got, "k") is got["k"] and facts_in({}, "k") == assumed("k")


def test_recording_refuses_a_changed_meaning_only_over_pairs_of_the_source(warehouse_path):
    with Warehouse(warehouse_path) as wh:
        assert record_facts(wh.sources, FACTS, "run-1") == []
        stricter = dataclasses.replace(FACTS, clear_label=3.0)
        # no pair of the source was landed under the old meaning: it is replaced, and said so
        notes = record_facts(wh.sources, stricter, "run-2")
        assert len(notes) == 1 and notes[0].startswith("meaning replaced") and "clear_label 2.0 -> 3.0" in notes[0]
        wh.con.execute("INSERT INTO candidate_pairs (pair_id, source, source_id, source_revision, history, response_a, "
                       "response_b, both_bad, est_tokens, prompt_tokens, response_a_tokens, response_b_tokens, "
                       "ingest_run_id, ingested_at) VALUES ('p', 's', 'p', 'r', [], 'a', 'b', false, 1, 1, 1, 1, "
                       "'run-2', now())")
        before = wh.sources.source_facts()
        with pytest.raises(SourceMeaningChangedError, match=r"clear_label 3\.0 -> 2\.0"):
            record_facts(wh.sources, FACTS, "run-3")
        assert wh.sources.source_facts() == before  # nothing written
        assert facts_changes(wh.sources, dataclasses.replace(stricter, license="mit")) == [
            'updated license "cc-by-4.0" -> "mit"']
