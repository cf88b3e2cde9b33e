"""`hh`: Anthropic HH-RLHF transcripts, parsed into a shared history and two final answers."""

from __future__ import annotations

import json

import pytest

from common.reasons import AdapterRejection
from tasks.ingest.declared.formats import FORMATS, detect_format
from tasks.ingest.declared.formats.hh import parse_transcript, transcript
from tests.tasks.ingest.declared.formats.helpers import (
    adapt,
    check_manifest,
    declaration,
    prepare,
    reasons_of,
    synth_through_ingest,
)

HH = FORMATS["hh"]
DECL = declaration("hh")
HISTORY = "\n\nHuman: What are some good fruits?\n\nAssistant: Apples and pears.\n\nHuman: Which is sweeter?"


def _row(chosen=" Pears, usually.", rejected=" I don't know.", history=HISTORY):
    return {"chosen": f"{history}\n\nAssistant:{chosen}", "rejected": f"{history}\n\nAssistant:{rejected}"}


def test_the_shared_turns_are_the_history_and_the_final_assistant_turns_the_answers(settings):
    (pair,), rejected = adapt(DECL, _row(), settings)
    assert not rejected and pair.history == [
        {"role": "user", "content": "What are some good fruits?"},
        {"role": "assistant", "content": "Apples and pears."},
        {"role": "user", "content": "Which is sweeter?"}]
    assert {pair.response_a, pair.response_b} == {"Pears, usually.", "I don't know."}
    assert pair.human_label == (1.0 if pair.response_a == "Pears, usually." else -1.0)


def test_a_transcript_reads_back_what_it_was_written_from():
    turns = [{"role": "user", "content": "Hi.\n\nA second paragraph."}, {"role": "assistant", "content": "Hello."}]
    assert parse_transcript(transcript(turns[:1], "Hello.")) == turns
    assert parse_transcript("Human: hi\n\nAssistant: hello") == [{"role": "user", "content": "hi"},
                                                                 {"role": "assistant", "content": "hello"}]
    assert parse_transcript("Hi there\n\nHuman: hi") is None and parse_transcript("no turns") is None


@pytest.mark.parametrize(("row", "reason"), [
    ({"chosen": "Just an answer.", "rejected": _row()["rejected"]}, AdapterRejection.TRANSCRIPT_MALFORMED),
    ({"chosen": "\n\nAssistant: hi\n\nHuman: q\n\nAssistant: a", "rejected": _row()["rejected"]},
     AdapterRejection.TRANSCRIPT_MALFORMED),
    ({"chosen": _row()["chosen"], "rejected": HISTORY}, AdapterRejection.CONVERSATION_NOT_ENDING_WITH_ANSWER),
    ({"chosen": _row()["chosen"], "rejected": _row(history=HISTORY.replace("pears.", "plums."))["rejected"]},
     AdapterRejection.MULTI_TURN_DIVERGENT_HISTORY),
    ({"chosen": _row()["chosen"], "rejected": _row(history="\n\nHuman: Something else?")["rejected"]},
     AdapterRejection.NO_COMMON_PROMPT),
    (_row(chosen=" Same.", rejected=" Same."), "responses_differ"),
    (_row(chosen="", rejected=" No."), "response_"),
    ({"chosen": ["a list"], "rejected": _row()["rejected"]}, "chosen:is_text"),
    ({"chosen": _row()["chosen"]}, "rejected:missing"),
    (_row(history="\n\nHuman:  "), "history:last_user_turn_not_empty"),
])
def test_a_bad_row_is_quarantined_with_its_reason_amid_good_ones(settings, row, reason):
    rows = [_row(chosen=f" yes {i}") for i in range(4)]
    rows[1] = row
    prepared = prepare(DECL, rows, settings)
    assert len(prepared.pairs) == 3 and set(reasons_of(prepared)) == {1}
    assert any(r.startswith(reason) for r in reasons_of(prepared)[1]), reasons_of(prepared)


def test_which_side_is_a_is_balanced(settings):
    pairs = [adapt(DECL, _row(chosen=f" good {i}", rejected=f" bad {i}"), settings)[0][0] for i in range(3000)]
    share = sum(p.response_a.startswith("good") for p in pairs) / len(pairs)
    assert 0.46 < share < 0.54 and {p.human_label for p in pairs} == {1.0, -1.0}


def test_synthetic_rows_plant_every_bad_kind_and_the_rest_make_their_pairs(tmp_path, settings, monkeypatch):
    decl = declaration("hh", columns={"id": "uid"})
    m, lines, prepared = synth_through_ingest(decl, tmp_path, settings, monkeypatch)
    check_manifest(m, prepared, set(HH.synth(decl).BAD_KINDS))
    pairs = [p for b in prepared for p in b.pairs]
    assert len(pairs) == m.rows - len(m.bad_rows) and any(len(p.history) > 1 for p in pairs)
    good = [json.loads(x) for i, x in enumerate(lines) if i not in m.bad_rows]
    assert all(HH.looks_like(r) for r in good)


def test_detect_takes_hh_transcripts_and_leaves_conversations_to_trl_implicit():
    rows = [_row(), _row(chosen=" Other.")]
    assert detect_format({"chosen", "rejected"}, rows) == "hh"
    assert detect_format({"chosen", "rejected"}) == "hh"  # without rows: the columns alone, `hh` first
    conversations = [{"chosen": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}]
    assert detect_format({"chosen", "rejected"}, conversations) == "trl-implicit"
    assert not HH.detect({"prompt", "chosen", "rejected"})


@pytest.mark.parametrize(("kw", "key"), [
    ({"label": {"scale": [1, 5]}}, "label.scale"),
    ({"label": {"preferred": "rejected"}}, "label.preferred"),
    ({"models": {"a": "x", "b": "y"}}, "models"),
    ({"columns": {"history": "h"}}, "columns.history"),
])
def test_check_names_each_mistake_by_its_key(kw, key):
    mistakes = HH.check(declaration("hh", **kw))
    assert len(mistakes) == 1 and mistakes[0].startswith(key + ":"), mistakes


def test_label_meaning_is_json_and_names_its_format():
    meaning = HH.label_meaning(DECL)
    assert json.loads(json.dumps(meaning)) == meaning and meaning["format"] == "hh" and meaning["clear_label"] == 1.0


@pytest.mark.parametrize(("fmt", "row"), [
    ("trl", {"prompt": "\n\nHuman: Hi.\n\nAssistant: Hello.\n\nHuman: Name a prime.\n\nAssistant:", "chosen": "7",
             "rejected": "8"}),
    ("pairwise", {"prompt": "Human: Hi.\n\nAssistant: Hello.\n\nHuman: Name a prime.\n\nAssistant:",
                  "response_a": "7", "response_b": "8", "preference": "a"}),
])
def test_a_transcript_prompt_is_parsed_by_the_hh_parser_in_every_format_with_a_prompt(settings, fmt, row):
    decl = declaration(fmt, prompt_format="hh", **({"label": {"a": "a", "b": "b"}} if fmt == "pairwise" else {}))
    (pair,), rejected = adapt(decl, row, settings)
    assert not rejected and pair.history == [{"role": "user", "content": "Hi."},
                                             {"role": "assistant", "content": "Hello."},
                                             {"role": "user", "content": "Name a prime."}]
    conversational = {**row, "prompt": [{"role": "user", "content": "Name a prime."}]}  # a message list: as it is
    (pair,), _ = adapt(decl, conversational, settings)
    assert pair.history == conversational["prompt"]
