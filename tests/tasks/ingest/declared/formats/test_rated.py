"""`rated`: the best of N rated responses against each one at least min_gap worse, on any declared scale."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from common.reasons import AdapterRejection
from schemas.pair import MODEL_A, MODEL_B
from tasks.ingest.declared.formats import FORMATS, detect_format
from tests.tasks.ingest.declared.formats.helpers import (
    adapt,
    check_manifest,
    declaration,
    prepare,
    reasons_of,
    synth_through_ingest,
)

RATED = FORMATS["rated"]
DECL = declaration("rated", label={"scale": [1, 5], "min_gap": 1})


def _row(*scores, prompt="Name a prime.", **kw):
    return {"prompt": prompt, "responses": [{"response": f"answer {k}", "score": s} for k, s in enumerate(scores)],
            **kw}


def _compared(pairs):
    """Each pair as (best position, other position), read from its source id."""
    return sorted(tuple(int(x) for x in p.source_id.rsplit(":", 1)[1].split(">")) for p in pairs)


def test_the_best_is_paired_with_each_response_at_least_min_gap_worse(settings):
    pairs, rejected = adapt(DECL, _row(4.5, 3.5, 4.0, 2.0, 4.5), settings)
    assert not rejected and _compared(pairs) == [(0, 1), (0, 3)]
    assert all(p.metadata["ties_with_best"] == 1 and p.metadata["within_gap"] == 1 for p in pairs)
    assert len({p.source_id for p in pairs}) == 2 and all(p.source_id.startswith("row-") for p in pairs)


@pytest.mark.parametrize(("scale", "gap", "scores", "label"), [
    ([1, 5], 1, (5, 4), 0.75),
    ([1, 5], 1, (5, 1), 3.0),
    ([0, 10], 2, (9, 4), 1.5),
    ([0, 1], 0.1, (0.7, 0.6), 0.3),  # a gap of exactly min_gap counts despite floating point
])
def test_the_human_label_is_the_gap_over_the_scale_times_three_from_a_s_side(settings, scale, gap, scores, label):
    decl = declaration("rated", label={"scale": scale, "min_gap": gap})
    (pair,), _ = adapt(decl, _row(*scores), settings)
    best_is_a = pair.response_a == "answer 0"
    assert pair.human_label == (label if best_is_a else -label)
    assert RATED.clear_label(decl) == pytest.approx(3 * gap / (scale[1] - scale[0]))
    assert abs(pair.human_label) >= RATED.clear_label(decl)  # every pair the rule makes is clear


def test_lower_is_better_reverses_the_direction(settings):
    decl = declaration("rated", label={"scale": [1, 10], "min_gap": 2, "direction": "lower"})
    pairs, _ = adapt(decl, _row(3, 1, 9, 2), settings)
    assert _compared(pairs) == [(1, 0), (1, 2)]
    for p in pairs:
        best_is_a = p.response_a == "answer 1"
        assert (p.human_label > 0) == best_is_a


def test_which_side_is_a_is_balanced_and_labels_come_in_both_signs(settings):
    pairs = [p for i in range(1500) for p in adapt(DECL, _row(5, 3, 1, prompt=f"q{i}"), settings)[0]]
    share = sum(p.response_a == "answer 0" for p in pairs) / len(pairs)
    assert len(pairs) == 3000 and 0.46 < share < 0.54
    assert Counter(p.human_label > 0 for p in pairs)[True] == sum(p.response_a == "answer 0" for p in pairs)


def test_a_row_whose_responses_all_tie_or_lie_within_the_gap_is_no_clear_preference(settings):
    for scores in [(4, 4, 4), (4, 3.5, 3.25)]:
        pairs, rejected = adapt(DECL, _row(*scores), settings)
        assert not pairs and [r.reasons for r in rejected] == [[AdapterRejection.NO_CLEAR_PREFERENCE]]


@pytest.mark.parametrize(("bad", "reason"), [
    ({"response": "x", "score": 7}, "completion_score_out_of_range:score"),
    ({"response": "x", "score": 0.5}, "completion_score_out_of_range:score"),
    ({"response": "x", "score": float("nan")}, "completion_not_finite:score"),
    ({"response": "x", "score": "N/A"}, "completion_score_invalid:score"),
    ({"response": "x", "score": True}, "completion_score_invalid:score"),
    ({"response": "x"}, "completion_score_invalid:score"),
    ({"response": " ", "score": 2}, "completion_response_empty"),
    ("just text", "completion_not_an_object"),
])
def test_a_bad_response_loses_itself_not_the_row(settings, bad, reason):
    row = _row(5, 2)
    row["responses"].append(bad)
    prepared = prepare(DECL, [row], settings)
    assert len(prepared.pairs) == 1 and reasons_of(prepared) == {0: [reason]}
    assert prepared.flags["rows_partly_quarantined"] == 1


def test_a_numeric_text_score_counts(settings):
    assert _compared(adapt(DECL, _row("5", "2.5"), settings)[0]) == [(0, 1)]


def test_responses_past_the_cap_are_left_out_and_counted(settings):
    settings = settings.model_copy(update={"max_completions_per_row": 3})
    pairs, rejected = adapt(DECL, _row(5, 4, 3, 1, 1, 1), settings)
    assert _compared(pairs) == [(0, 1), (0, 2)] and rejected[0].reasons == [AdapterRejection.COMPLETIONS_OVER_CAP.of(3)]


@pytest.mark.parametrize(("row", "reason"), [
    (_row(5), AdapterRejection.FEWER_THAN_TWO_COMPLETIONS),
    (_row(5, 9), AdapterRejection.FEWER_THAN_TWO_COMPLETIONS),
    ({"prompt": "q", "responses": "two answers"}, "responses:is_list"),
    ({"prompt": [{"role": "assistant", "content": "a"}], "responses": _row(5, 1)["responses"]},
     "prompt:ends_with_user_turn"),
    ({"prompt": "q", "responses": [{"response": "same", "score": 5}, {"response": "same", "score": 1}]},
     "responses_differ"),
])
def test_a_bad_row_is_quarantined_with_its_reason(settings, row, reason):
    prepared = prepare(DECL, [_row(5, 1), row], settings)
    assert len(prepared.pairs) == 1 and reason in reasons_of(prepared)[1], reasons_of(prepared)


def test_renamed_columns_ids_and_models_are_read(settings):
    decl = declaration("rated", label={"scale": [0, 10]},
                       columns={"prompt": "instruction", "responses": "outputs", "response": "text",
                                "score": "grade", "id": "uid"}, models={"response": "by"})
    row = {"instruction": "q", "uid": 7, "outputs": [{"text": "good", "grade": 9, "by": "gpt-large-2"},
                                                     {"text": "bad", "grade": 2, "by": "llama-small-1"},
                                                     {"text": "odd", "grade": 11}]}
    prepared = prepare(decl, [row], settings)
    (pair,) = prepared.pairs
    assert pair.source_id == "7:0>1" and reasons_of(prepared) == {0: ["completion_score_out_of_range:grade"]}
    names = {pair.response_a: pair.metadata[MODEL_A], pair.response_b: pair.metadata[MODEL_B]}
    assert names == {"good": "gpt-large-2", "bad": "llama-small-1"} and RATED.names_models(decl)
    assert RATED.clear_label(decl) == pytest.approx(3 * 2.5 / 10)  # the default min_gap: a quarter of the scale


@pytest.mark.parametrize("label", [
    {"scale": [1, 5], "min_gap": 1},
    {"scale": [1, 10], "direction": "lower"},
    {"scale": [0, 1], "min_gap": 0.2},
])
def test_synthetic_rows_make_the_pairs_and_quarantine_the_manifest_says(tmp_path, settings, monkeypatch, label):
    decl = declaration("rated", label=label, models={"response": "model"},
                       columns={"prompt": "instruction", "responses": "completions", "score": "rating"})
    m, lines, prepared = synth_through_ingest(decl, tmp_path, settings, monkeypatch, n=800, exact_dup_rate=0.05,
                                              near_dup_rate=0.05)
    quarantined = check_manifest(m, prepared, set(RATED.synth(decl).BAD_KINDS))
    made, pair_ids = Counter(), defaultdict(set)
    for b in prepared:
        for pair, pid in zip(b.pairs, b.pair_ids):
            made[pair.source_id.rsplit(":", 1)[0]] += 1
            pair_ids[pair.source_id.rsplit(":", 1)[0]].add(pid)
    row_id = RATED.source_id(decl)
    expected = Counter()
    for i, n in m.pairs.items():
        expected[row_id(json.loads(lines[i]))] += n
    assert made == expected and sum(made.values()) > len(m.pairs)
    assert m.no_clear_preference and all(quarantined[i] == ["no_clear_preference"] for i in m.no_clear_preference)
    for dup, orig in m.exact_duplicates:  # the same comparisons, whatever the responses' order
        assert pair_ids[row_id(json.loads(lines[dup]))] == pair_ids[row_id(json.loads(lines[orig]))]
    pairs = [p for b in prepared for p in b.pairs]
    assert all(abs(p.human_label) >= RATED.clear_label(decl) for p in pairs)
    assert 0.4 < sum(p.human_label > 0 for p in pairs) / len(pairs) < 0.6
    assert any(p.metadata["ties_with_best"] for p in pairs)


def test_detect_finds_rated_by_its_columns():
    assert detect_format({"prompt", "responses", "chosen"}) == "rated"
    assert not RATED.detect({"instruction", "completions"})


@pytest.mark.parametrize(("label", "key"), [
    ({}, "label.scale"),
    ({"scale": [5, 1]}, "label.scale"),
    ({"scale": [1, 1]}, "label.scale"),
    ({"scale": [1, 2, 3]}, "label.scale"),
    ({"scale": ["1", "5"]}, "label.scale"),
    ({"scale": [1, 5], "min_gap": -1}, "label.min_gap"),
    ({"scale": [1, 5], "min_gap": 0}, "label.min_gap"),
    ({"scale": [1, 5], "min_gap": 4.5}, "label.min_gap"),
    ({"scale": [1, 5], "min_gap": "1"}, "label.min_gap"),
    ({"scale": [1, 5], "direction": "up"}, "label.direction"),
    ({"scale": [1, 5], "a": "1"}, "label.a"),
])
def test_check_names_each_label_mistake_by_its_key(label, key):
    mistakes = RATED.check(declaration("rated", label=label))
    assert len(mistakes) == 1 and mistakes[0].startswith(key + ":"), mistakes


@pytest.mark.parametrize(("kw", "key"), [
    ({"models": {"a": "ma", "b": "mb"}}, "models.a"),
    ({"columns": {"response": "text", "score": "text"}}, "columns.score"),
    ({"columns": {"completions": "x"}}, "columns.completions"),
])
def test_check_names_other_mistakes_by_their_key(kw, key):
    mistakes = RATED.check(declaration("rated", label={"scale": [1, 5]}, **kw))
    assert mistakes and all(m.startswith(key.split(".")[0]) for m in mistakes) and mistakes[0].startswith(key), mistakes


def test_label_meaning_is_json_stable_and_follows_the_rule():
    meaning = RATED.label_meaning(DECL)
    assert json.loads(json.dumps(meaning)) == meaning == RATED.label_meaning(declaration("rated", label=dict(DECL.label)))
    assert meaning["scale"] == [1.0, 5.0] and meaning["min_gap"] == 1.0 and meaning["direction"] == "higher"
    assert RATED.label_meaning(declaration("rated", label={"scale": [1, 5], "min_gap": 2}))["clear_label"] == 1.5


NECTAR = declaration("rated", columns={"responses": "answers", "response": "answer", "score": "rank"},
                     label={"scale": [1, 7], "min_gap": 1, "direction": "lower"}, models={"response": "model"},
                     prompt_format="hh")


def _nectar(prompt: str) -> dict:
    """A row of berkeley-nest/Nectar's shape: a transcript prompt, answers ranked 1 (best) to 7."""
    return {"prompt": prompt, "answers": [{"answer": f"answer {k}", "model": f"m{k}", "rank": float(k + 1)}
                                          for k in range(3)], "turns": 1, "num_responses": 3}


def test_prompt_format_hh_reads_a_transcript_prompt_as_its_turns(settings):
    """Nectar's `\\n\\nHuman: ...\\n\\nAssistant:` prompt: its turns, parsed as the hh format parses its transcripts,
    the empty closing Assistant turn dropped; without prompt_format it is one user turn, markers and all."""
    pairs, rejected = adapt(NECTAR, _nectar("\n\nHuman: What is 2+2?\n\nAssistant:"), settings)
    assert not rejected and len(pairs) == 2  # rank 1 against ranks 2 and 3
    assert all(p.history == [{"role": "user", "content": "What is 2+2?"}] for p in pairs)
    turns = "\n\nHuman: Hi.\n\nAssistant: Hello! How can I help?\n\nHuman: Name a prime.\n\nAssistant:"
    (pair, *_), _ = adapt(NECTAR, _nectar(turns), settings)
    assert pair.history == [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello! How can I help?"},
                            {"role": "user", "content": "Name a prime."}]
    verbatim = declaration("rated", **{k: getattr(NECTAR, k) for k in ("columns", "label", "models")})
    (pair, *_), _ = adapt(verbatim, _nectar(turns), settings)
    assert pair.history == [{"role": "user", "content": turns}]


@pytest.mark.parametrize(("prompt", "reason"), [
    ("What is 2+2?", "transcript_malformed"),  # no markers
    ("\n\nAssistant: hi\n\nHuman: q\n\nAssistant:", "transcript_malformed"),  # starts with the assistant
    ("\n\nHuman: q\n\nAssistant: an answer already", "prompt:ends_with_user_turn"),
])
def test_a_prompt_that_is_no_transcript_is_quarantined_by_name(settings, prompt, reason):
    pairs, rejected = adapt(NECTAR, _nectar(prompt), settings)
    assert not pairs and [r.reasons for r in rejected] == [[reason]]
    assert [q for q in reasons_of(prepare(NECTAR, [_nectar(prompt)], settings)).values()] == [[reason]]


def test_prompt_format_is_refused_where_there_is_no_prompt_or_it_is_unknown():
    from tasks.ingest.declared.formats import FORMATS

    assert FORMATS["rated"].check(NECTAR) == []
    assert any(m.startswith("prompt_format: 'chatml' is not a prompt format")
               for m in FORMATS["trl"].check(declaration("trl", prompt_format="chatml")))
    for fmt in ("hh", "trl-implicit"):
        assert any(m.startswith(f"prompt_format: {fmt} has no prompt column")
                   for m in FORMATS[fmt].check(declaration(fmt, prompt_format="hh")))
    assert "prompt_format" not in declaration("rated").as_json() and NECTAR.as_json()["prompt_format"] == "hh"


def test_synthetic_rows_of_a_transcript_prompt_are_transcripts_and_make_their_pairs(tmp_path, settings, monkeypatch):
    m, lines, prepared = synth_through_ingest(NECTAR, tmp_path, settings, monkeypatch)
    check_manifest(m, prepared, set(RATED.synth(NECTAR).BAD_KINDS))
    assert sum(len(b.pairs) for b in prepared) == sum(m.pairs.values())
    good = [json.loads(x) for i, x in enumerate(lines) if i not in m.bad_rows]
    assert all(r["prompt"].startswith("\n\nHuman: ") and r["prompt"].endswith("\n\nAssistant:") for r in good)
