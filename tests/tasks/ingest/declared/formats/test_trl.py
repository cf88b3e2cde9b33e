"""`trl`: TRL's explicit-prompt preference rows, standard and conversational."""

from __future__ import annotations

import json

import pytest

from tasks.ingest.declared.formats import FORMATS, detect_format
from tasks.ingest.declared.model import DeclarationError
from tests.tasks.ingest.declared.formats.helpers import (
    adapt,
    check_manifest,
    declaration,
    prepare,
    reasons_of,
    synth_through_ingest,
)

TRL = FORMATS["trl"]
DECL = declaration("trl")


def _row(prompt="What color is the sky?", chosen="It is blue.", rejected="It is green.", **kw):
    return {"prompt": prompt, "chosen": chosen, "rejected": rejected, **kw}


def test_a_standard_row_is_one_pair_whose_label_says_which_side_was_chosen(settings):
    (pair,), rejected = adapt(DECL, _row(), settings)
    assert not rejected and pair.source == "my-prefs"
    assert pair.history == [{"role": "user", "content": "What color is the sky?"}]
    assert {pair.response_a, pair.response_b} == {"It is blue.", "It is green."}
    chosen_is_a = pair.response_a == "It is blue."
    assert pair.human_label == (1.0 if chosen_is_a else -1.0)
    assert pair.raw_label == ("chosen=A" if chosen_is_a else "chosen=B")
    assert pair.metadata["chosen"] == ("a" if chosen_is_a else "b") and pair.metadata["split"] == "train"


def test_a_conversational_row_keeps_its_history_and_joins_several_assistant_turns(settings):
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
              {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Sky colour?"}]
    row = _row(prompt=prompt, chosen=[{"role": "assistant", "content": "Blue."},
                                      {"role": "assistant", "content": "Mostly."}],
               rejected=[{"role": "assistant", "content": "Green.", "weight": 1}])
    prepared = prepare(DECL, [row], settings)
    (pair,) = prepared.pairs
    assert not prepared.quarantined and pair.history == prompt
    assert {pair.response_a, pair.response_b} == {"Blue.\n\nMostly.", "Green."}


def test_which_side_is_a_is_balanced_stable_and_both_signs_of_labels_come(settings):
    rows = [_row(prompt=f"question {i}", chosen=f"good answer {i}", rejected=f"bad answer {i}") for i in range(3000)]
    pairs = [adapt(DECL, r, settings)[0][0] for r in rows]
    a_chosen = [p.response_a.startswith("good") for p in pairs]
    assert 0.46 < sum(a_chosen) / len(pairs) < 0.54
    assert all(p.human_label == (1.0 if a else -1.0) for p, a in zip(pairs, a_chosen))
    again = [adapt(DECL, r, settings)[0][0] for r in rows[:200]]
    assert [p.response_a for p in again] == [p.response_a for p in pairs[:200]]


@pytest.mark.parametrize(("change", "reason"), [
    ({"prompt": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
     "prompt:ends_with_user_turn"),
    ({"prompt": []}, "prompt:ends_with_user_turn"),
    ({"chosen": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}]},
     "chosen:ends_with_assistant_turn"),
    ({"rejected": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
     "rejected:assistant_turns_only"),
    ({"chosen": 5}, "chosen:is_text_or_message_list"),
    ({"chosen": [{"role": "assistant", "content": [{"type": "text", "text": "a"}]}]}, "chosen:is_text_or_message_list"),
    ({"rejected": "It is blue."}, "responses_differ"),
    ({"rejected": [{"role": "assistant", "content": "It is blue."}]}, "responses_differ"),
    ({"chosen": "  "}, "response_"),
    ({"prompt": None}, "prompt:missing"),
])
def test_a_bad_row_is_quarantined_with_its_reason_amid_good_ones(settings, change, reason):
    rows = [_row(prompt=f"q{i}") for i in range(5)]
    rows[2] = {**rows[2], **change}
    prepared = prepare(DECL, rows, settings)
    assert len(prepared.pairs) == 4 and set(reasons_of(prepared)) == {2}
    assert any(r.startswith(reason) for r in reasons_of(prepared)[2]), reasons_of(prepared)


def test_renamed_columns_are_read_and_named_in_reasons(settings):
    decl = declaration("trl", columns={"prompt": "question", "chosen": "good", "rejected": "bad", "id": "uid"})
    rows = [{"question": "q", "good": "yes", "bad": "no", "uid": 17},
            {"question": [{"role": "assistant", "content": "a"}], "good": "yes", "bad": "no", "uid": "x"},
            {"question": "q", "good": "yes", "bad": "no", "uid": True},
            {"question": "q", "good": "yes", "bad": "no"}]
    prepared = prepare(decl, rows, settings)
    assert [p.source_id for p in prepared.pairs] == ["17"]
    assert reasons_of(prepared) == {1: ["question:ends_with_user_turn"], 2: ["uid:is_id"], 3: ["uid:missing"]}


def test_the_source_id_is_a_content_hash_without_an_id_column():
    sid = TRL.source_id(DECL)
    assert sid(_row()) == sid(dict(_row())) != sid(_row(chosen="It is azure."))
    assert sid(_row()).startswith("row-")


def test_synthetic_rows_plant_every_bad_kind_and_the_rest_make_their_pairs(tmp_path, settings, monkeypatch):
    decl = declaration("trl", columns={"prompt": "instruction", "id": "uid"})
    m, lines, prepared = synth_through_ingest(decl, tmp_path, settings, monkeypatch)
    check_manifest(m, prepared, set(TRL.synth(decl).BAD_KINDS))
    pairs = [p for b in prepared for p in b.pairs]
    assert len(pairs) == m.rows - len(m.bad_rows)
    assert all("instruction" in json.loads(lines[i]) for i in range(len(lines)) if i not in m.bad_rows)
    assert any(isinstance(json.loads(x)["instruction"], str) for x in lines[:50])  # both forms are written
    assert any(isinstance(json.loads(x)["instruction"], list) for x in lines[:50])
    assert 0.4 < sum(p.human_label > 0 for p in pairs) / len(pairs) < 0.6


def test_synthetic_rows_are_seeded(tmp_path, settings, monkeypatch):
    a = synth_through_ingest(DECL, tmp_path / "a", settings, monkeypatch, n=100, seed=4)[1]
    b = synth_through_ingest(DECL, tmp_path / "b", settings, monkeypatch, n=100, seed=4)[1]
    c = synth_through_ingest(DECL, tmp_path / "c", settings, monkeypatch, n=100, seed=5)[1]
    assert a == b != c


def test_detect_finds_trl_by_its_columns_and_refuses_columns_no_format_has():
    assert detect_format({"prompt", "chosen", "rejected", "extra"}) == "trl"
    assert TRL.detect({"prompt", "chosen", "rejected"}) and not TRL.detect({"chosen", "rejected"})
    with pytest.raises(DeclarationError) as err:
        detect_format({"question", "answer"})
    assert "answer, question" in str(err.value) and all(name in str(err.value) for name in FORMATS)


@pytest.mark.parametrize(("kw", "key"), [
    ({"label": {"scale": [1, 5]}}, "label.scale"),
    ({"label": {"preferred": "rejected"}}, "label.preferred"),
    ({"models": {"a": "model_a", "b": "model_b"}}, "models"),
    ({"columns": {"response_a": "x"}}, "columns.response_a"),
    ({"columns": {"chosen": "answer", "rejected": "answer"}}, "columns.rejected"),
    ({"columns": {"prompt": ""}}, "columns.prompt"),
])
def test_check_names_each_mistake_by_its_key(kw, key):
    mistakes = TRL.check(declaration("trl", **kw))
    assert len(mistakes) == 1 and mistakes[0].startswith(key + ":"), mistakes


def test_check_accepts_a_plain_declaration_and_the_label_said_aloud():
    assert TRL.check(DECL) == [] and TRL.check(declaration("trl", label={"preferred": "chosen"})) == []
    assert TRL.check(declaration("trl", columns={"prompt": "q", "chosen": "c", "rejected": "r", "id": "i"})) == []


def test_label_meaning_is_json_and_stable():
    meaning = TRL.label_meaning(DECL)
    assert json.loads(json.dumps(meaning)) == meaning == TRL.label_meaning(declaration("trl"))
    assert meaning["format"] == "trl" and meaning["clear_label"] == TRL.clear_label(DECL) == 1.0
