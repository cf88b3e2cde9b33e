"""`trl-implicit`: chosen / rejected whose shared start is the prompt (TRL's `extract_prompt` rule)."""

from __future__ import annotations

import json

import pytest

from common.reasons import AdapterRejection
from tasks.ingest.declared.formats import FORMATS, detect_format
from tasks.ingest.declared.formats.trl_implicit import shared_prefix_length, split_implicit
from tests.tasks.ingest.declared.formats.helpers import (
    adapt,
    check_manifest,
    declaration,
    prepare,
    reasons_of,
    synth_through_ingest,
)

IMPLICIT = FORMATS["trl-implicit"]
DECL = declaration("trl-implicit")
USER = {"role": "user", "content": "What color is the sky?"}


def _said(role, content):
    return {"role": role, "content": content}


def _conv(answer, history=(USER,)):
    return [*history, _said("assistant", answer)]


def test_the_shared_messages_are_the_history_and_the_last_turns_the_answers(settings):
    history = (_said("system", "Be brief."), USER, _said("assistant", "Blue, mostly."), _said("user", "Why?"))
    row = {"chosen": _conv("Rayleigh scattering.", history), "rejected": _conv("Paint.", history)}
    (pair,), rejected = adapt(DECL, row, settings)
    assert not rejected and pair.history == list(history)
    assert {pair.response_a, pair.response_b} == {"Rayleigh scattering.", "Paint."}
    assert pair.human_label == (1.0 if pair.response_a == "Rayleigh scattering." else -1.0)


def test_texts_follow_trl_a_common_start_and_a_space_before_the_difference_goes_to_the_answers():
    # TRL's own example of the rule: the prompt is the common start, without the space before the difference
    history, chosen, rejected = split_implicit("The sky is blue.", "The sky is green.")
    assert history == [{"role": "user", "content": "The sky is"}] and (chosen, rejected) == (" blue.", " green.")
    assert split_implicit("Q?\n\nYes", "Q?\n\nNo") == ([{"role": "user", "content": "Q?\n\n"}], "Yes", "No")
    # one the start of the other: each keeps its last element (TRL's loop ends one short)
    assert shared_prefix_length("abc", "abcd") == 2 and shared_prefix_length([1, 2], [1, 2]) == 1


def test_a_chosen_equal_to_its_rejected_is_quarantined_as_identical(settings):
    rows = [{"chosen": _conv(f"a{i}"), "rejected": _conv(f"b{i}")} for i in range(3)]
    rows[1] = {"chosen": _conv("same"), "rejected": _conv("same")}
    rows.append({"chosen": "Q? Same.", "rejected": "Q? Same."})
    assert reasons_of(prepare(DECL, rows, settings)) == {1: ["responses_differ"], 3: ["responses_differ"]}


@pytest.mark.parametrize(("row", "reason"), [
    ({"chosen": _conv("a"), "rejected": _conv("b", (_said("user", "Another question"),))},
     AdapterRejection.NO_COMMON_PROMPT),
    ({"chosen": "Yes it is", "rejected": "No it is not"}, AdapterRejection.NO_COMMON_PROMPT),
    ({"chosen": "Q? Yes", "rejected": _conv("No")}, AdapterRejection.NO_COMMON_PROMPT),
    ({"chosen": [*_conv("a"), _said("user", "more"), _said("assistant", "more a")], "rejected": _conv("b")},
     AdapterRejection.RESPONSE_NOT_ONE_ASSISTANT_TURN),
    ({"chosen": [USER, _said("user", "again"), _said("assistant", "a")], "rejected": _conv("b")},
     AdapterRejection.RESPONSE_NOT_ONE_ASSISTANT_TURN),
    ({"chosen": [USER, _said("assistant", "a"), _said("user", "q")], "rejected": _conv("b")},
     "chosen:ends_with_assistant_turn"),
    ({"chosen": [], "rejected": _conv("b")}, "chosen:ends_with_assistant_turn"),
    ({"chosen": {"text": "x"}, "rejected": _conv("b")}, "chosen:is_text_or_message_list"),
    ({"chosen": _conv("a", (USER, _said("assistant", "hi"))), "rejected": _conv("b", (USER, _said("assistant", "hi")))},
     "history:ends_with_user_turn"),
])
def test_a_bad_row_is_quarantined_with_its_reason_amid_good_ones(settings, row, reason):
    rows = [{"chosen": _conv(f"a{i}"), "rejected": _conv(f"b{i}")} for i in range(4)]
    rows[1] = row
    prepared = prepare(DECL, rows, settings)
    assert len(prepared.pairs) == 3 and set(reasons_of(prepared)) == {1}
    assert any(r.startswith(reason) for r in reasons_of(prepared)[1]), reasons_of(prepared)


def test_which_side_is_a_is_balanced(settings):
    pairs = [adapt(DECL, {"chosen": _conv(f"good {i}"), "rejected": _conv(f"bad {i}")}, settings)[0][0]
             for i in range(3000)]
    share = sum(p.response_a.startswith("good") for p in pairs) / len(pairs)
    assert 0.46 < share < 0.54 and {p.human_label for p in pairs} == {1.0, -1.0}


def test_synthetic_rows_plant_every_bad_kind_and_the_rest_make_their_pairs(tmp_path, settings, monkeypatch):
    decl = declaration("trl-implicit", columns={"chosen": "better", "rejected": "worse"})
    m, lines, prepared = synth_through_ingest(decl, tmp_path, settings, monkeypatch)
    check_manifest(m, prepared, set(IMPLICIT.synth(decl).BAD_KINDS))
    assert sum(len(b.pairs) for b in prepared) == m.rows - len(m.bad_rows)
    good = [json.loads(x) for i, x in enumerate(lines) if i not in m.bad_rows]
    assert {type(r["better"]) for r in good} == {str, list}  # both forms are written


def test_detect_leaves_hh_transcripts_to_hh_and_takes_the_rest():
    assert IMPLICIT.detect({"chosen", "rejected"}) and IMPLICIT.detect({"prompt", "chosen", "rejected"})
    assert detect_format({"prompt", "chosen", "rejected"}) == "trl"  # with a prompt, trl first unless rows say else
    conversations = [{"chosen": _conv("a"), "rejected": _conv("b")}] * 3
    assert detect_format({"chosen", "rejected"}, conversations) == "trl-implicit"
    assert detect_format({"chosen", "rejected"}, [{"chosen": "Q? yes", "rejected": "Q? no"}]) == "trl-implicit"
    assert not IMPLICIT.looks_like({"chosen": "\n\nHuman: hi\n\nAssistant: hello", "rejected": "x"})


@pytest.mark.parametrize(("kw", "key"), [
    ({"label": {"a": "1"}}, "label.a"),
    ({"models": {"response": "model"}}, "models"),
    ({"columns": {"prompt": "question"}}, "columns.prompt"),
])
def test_check_names_each_mistake_by_its_key(kw, key):
    mistakes = IMPLICIT.check(declaration("trl-implicit", **kw))
    assert len(mistakes) == 1 and mistakes[0].startswith(key + ":"), mistakes


def test_label_meaning_is_json_and_names_its_format():
    meaning = IMPLICIT.label_meaning(DECL)
    assert json.loads(json.dumps(meaning)) == meaning and meaning["format"] == "trl-implicit"
