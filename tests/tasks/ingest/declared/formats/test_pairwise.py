"""`pairwise`: a prompt, two responses and a preference column whose values the declaration names."""

from __future__ import annotations

import json

import pytest

from common.reasons import AdapterRejection
from schemas.pair import MODEL_A, MODEL_B
from tasks.ingest.declared.formats import FORMATS, detect_format
from tasks.ingest.declared.formats.pairwise import label_text
from tests.tasks.ingest.declared.formats.helpers import (
    adapt,
    check_manifest,
    declaration,
    prepare,
    reasons_of,
    synth_through_ingest,
)

PAIRWISE = FORMATS["pairwise"]
LABEL = {"a": "1", "b": 2, "tie": ["tie", "0"], "both_bad": ["neither"]}
DECL = declaration("pairwise", label=LABEL)


def _row(preference, prompt="Which is right?", a="Answer one.", b="Answer two.", **kw):
    return {"prompt": prompt, "response_a": a, "response_b": b, "preference": preference, **kw}


@pytest.mark.parametrize(("value", "label", "both_bad"), [
    ("1", 1.0, False), (1, 1.0, False), (1.0, 1.0, False), (" 1 ", 1.0, False),
    ("2", -1.0, False), (2, -1.0, False),
    ("tie", 0.0, False), (0, 0.0, False),
    ("neither", 0.0, True),
])
def test_declared_values_map_to_the_scale_compared_as_text(settings, value, label, both_bad):
    (pair,), rejected = adapt(DECL, _row(value), settings)
    assert not rejected and (pair.human_label, pair.both_bad) == (label, both_bad)
    assert (pair.response_a, pair.response_b) == ("Answer one.", "Answer two.")  # A is the source's A
    assert pair.raw_label == label_text(value)


def test_a_null_or_absent_preference_lands_unlabelled_not_quarantined(settings):
    rows = [_row(None), {k: v for k, v in _row("1").items() if k != "preference"}, _row(float("nan")), _row("2")]
    prepared = prepare(DECL, rows, settings)
    assert not prepared.quarantined
    assert [p.human_label for p in prepared.pairs] == [None, None, None, -1.0]
    assert [p.raw_label for p in prepared.pairs] == [None, None, None, "2"]


@pytest.mark.parametrize("value", ["3", "Tie", 1.5, True, ["1"], {"v": 1}, ""])
def test_a_value_outside_the_declared_ones_is_quarantined_by_row(settings, value):
    rows = [_row("1"), _row(value), _row("2")]
    prepared = prepare(DECL, rows, settings)
    assert reasons_of(prepared) == {1: [AdapterRejection.LABEL_OUTSIDE_DECLARED_SCALE]}
    assert len(prepared.pairs) == 2 and "declared" in prepared.quarantined[0].detail


def test_label_text_compares_numbers_texts_and_booleans_alike():
    assert label_text(1) == label_text(1.0) == label_text("1") == "1"
    assert label_text(True) == "true" and label_text(0.5) == "0.5" and label_text(float("nan")) is None
    assert label_text([1]) is None and label_text(None) is None


def test_model_columns_name_each_side_s_model(settings):
    decl = declaration("pairwise", label=LABEL, models={"a": "model_1", "b": "model_2"})
    (pair,), _ = adapt(decl, _row("1", model_1="gpt-large-2", model_2=None), settings)
    assert pair.metadata[MODEL_A] == "gpt-large-2" and pair.metadata[MODEL_B] is None
    assert PAIRWISE.names_models(decl) and not PAIRWISE.names_models(DECL)
    assert MODEL_A not in adapt(DECL, _row("1"), settings)[0][0].metadata


@pytest.mark.parametrize(("change", "reason"), [
    ({"prompt": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
     "prompt:ends_with_user_turn"),
    ({"prompt": [{"role": "tool", "content": "x"}, {"role": "user", "content": "q"}]}, "history:roles_allowed"),
    ({"prompt": 3}, "prompt:is_text_or_message_list"),
    ({"response_b": "Answer one."}, "responses_differ"),
    ({"response_a": None}, "response_a:missing"),
    ({"response_a": 42}, "response_a:is_text"),
    ({"response_b": "\u200b"}, "response_b:not_empty"),
    ({"preference": [float("nan")]}, AdapterRejection.LABEL_OUTSIDE_DECLARED_SCALE),
    ({"response_a": float("inf")}, "not_finite:response_a"),
])
def test_a_bad_row_is_quarantined_with_its_reason_amid_good_ones(settings, change, reason):
    rows = [_row("1", prompt=f"q{i}") for i in range(4)]
    rows[2] = {**rows[2], **change}
    prepared = prepare(DECL, rows, settings)
    assert len(prepared.pairs) == 3 and set(reasons_of(prepared)) == {2}
    assert reason in reasons_of(prepared)[2], reasons_of(prepared)


@pytest.mark.parametrize("declared", [
    LABEL,
    {"a": "A", "b": "B"},
    {"a": ["model_a", 1], "b": ["model_b", 2], "both_bad": "both_bad"},
])
def test_synthetic_rows_plant_every_bad_kind_and_use_the_declared_values(tmp_path, settings, monkeypatch, declared):
    decl = declaration("pairwise", label=declared, models={"a": "ma", "b": "mb"},
                       columns={"preference": "winner", "id": "question_id"})
    m, lines, prepared = synth_through_ingest(decl, tmp_path, settings, monkeypatch)
    check_manifest(m, prepared, set(PAIRWISE.synth(decl).BAD_KINDS))
    pairs = [p for b in prepared for p in b.pairs]
    assert len(pairs) == m.rows - len(m.bad_rows)
    good = [json.loads(x) for i, x in enumerate(lines) if i not in m.bad_rows]
    allowed = {label_text(v) for vs in declared.values() for v in (vs if isinstance(vs, list) else [vs])}
    assert {label_text(r["winner"]) for r in good if r["winner"] is not None} <= allowed
    labels = {p.human_label for p in pairs}
    assert {1.0, -1.0, None} <= labels and (0.0 in labels) == ("tie" in declared or "both_bad" in declared)
    assert any(p.both_bad for p in pairs) == ("both_bad" in declared)
    assert all(isinstance(p.metadata[MODEL_A], str) for p in pairs)


def test_detect_finds_pairwise_by_its_columns():
    assert detect_format({"prompt", "response_a", "response_b", "preference", "other"}) == "pairwise"
    assert not PAIRWISE.detect({"prompt", "response_a", "response_b"})


@pytest.mark.parametrize(("label", "key"), [
    ({"b": "2"}, "label.a"),
    ({"a": "1", "b": "1"}, "label.b"),
    ({"a": 1, "b": "1"}, "label.b"),  # compared as text: the same value
    ({"a": "1", "b": "2", "tie": ["x"], "both_bad": ["x"]}, "label.both_bad"),
    ({"a": "1", "b": "2", "tie": []}, "label.tie"),
    ({"a": {"v": 1}, "b": "2"}, "label.a"),
    ({"a": "", "b": "2"}, "label.a"),
    ({"a": "1", "b": "2", "draw": "0"}, "label.draw"),
])
def test_check_names_each_label_mistake_by_its_key(label, key):
    mistakes = PAIRWISE.check(declaration("pairwise", label=label))
    assert len(mistakes) == 1 and mistakes[0].startswith(key + ":"), mistakes


@pytest.mark.parametrize(("models", "key"), [
    ({"a": "model_a"}, "models.b"),
    ({"a": "m", "b": "m"}, "models.b"),
    ({"a": "ma", "b": "mb", "response": "m"}, "models.response"),
    ({"a": "prompt", "b": "mb"}, "models.a"),
])
def test_check_names_each_models_mistake_by_its_key(models, key):
    mistakes = PAIRWISE.check(declaration("pairwise", label=LABEL, models=models))
    assert len(mistakes) == 1 and mistakes[0].startswith(key + ":"), mistakes


def test_label_meaning_is_json_stable_and_says_the_values():
    meaning = PAIRWISE.label_meaning(DECL)
    assert json.loads(json.dumps(meaning)) == meaning == PAIRWISE.label_meaning(declaration("pairwise", label=LABEL))
    assert meaning["values"] == {"a": ["1"], "b": ["2"], "tie": ["0", "tie"], "both_bad": ["neither"]}
    reordered = declaration("pairwise", label={**LABEL, "tie": ["0", "tie"]})
    assert PAIRWISE.label_meaning(reordered) == meaning
    assert PAIRWISE.label_meaning(declaration("pairwise", label={**LABEL, "a": "A"})) != meaning
