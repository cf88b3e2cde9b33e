"""UltraFeedback: the best completion against each one at least the threshold below it, and nothing else."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from schemas.pair import HUMAN_LABEL_MAX, MODEL_A, MODEL_B, CandidatePair, Rejection
from tasks.curate.calibration import clear_human_direction
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import RawBatch
from tasks.ingest.sources import SOURCES, AdapterContext, get_source, known_facts
from tasks.ingest.sources.ultrafeedback import PAIR_THRESHOLD, pair_source_id, source_id

SRC = get_source("ultrafeedback")


def _completion(k: int, fine, overall=7.0, **kw):
    c = {"model": f"model-{k}", "response": f"answer number {k}", "fine-grained_score": fine, "overall_score": overall,
         "annotations": {"helpfulness": {"Rating": "4", "Rationale": "fine"}}, "critique": "ok",
         "custom_system_prompt": "You are helpful.", "principle": "helpfulness"}
    c.update(kw)
    return c


def _row(*scores, instruction="What is the capital of France?", **kw):
    """A row whose completion k has fine-grained score scores[k] (or (fine, overall))."""
    completions = [_completion(k, *(s if isinstance(s, tuple) else (s,))) for k, s in enumerate(scores)]
    row = {"source": "evol_instruct", "instruction": instruction, "models": [c["model"] for c in completions],
           "completions": completions, "correct_answers": ["None"], "incorrect_answers": ["None"]}
    row.update(kw)
    return row


def _made(row, settings):
    results = list(SRC.adapt(row, AdapterContext(settings, "train", "t:1")))
    return ([r for r in results if isinstance(r, CandidatePair)], [r for r in results if isinstance(r, Rejection)])


def _compared(row, pairs):
    """Each pair as (better position, worse position), read from its source id."""
    prefix = source_id(row) + ":"
    assert all(p.source_id.startswith(prefix) for p in pairs)
    return sorted(tuple(int(x) for x in p.source_id[len(prefix):].split(">")) for p in pairs)


def test_the_best_is_paired_with_every_completion_at_least_the_threshold_below(settings):
    row = _row(4.5, 3.5, 4.0, 2.0)  # 1 is exactly 1.0 below, 2 only 0.5, 3 2.5 below
    pairs, rejected = _made(row, settings)
    assert not rejected and _compared(row, pairs) == [(0, 1), (0, 3)]
    assert {p.source_id for p in pairs} == {pair_source_id(source_id(row), 0, 1), pair_source_id(source_id(row), 0, 3)}
    assert all(p.history == [{"role": "user", "content": row["instruction"]}] for p in pairs)


def test_a_difference_of_the_threshold_counts_despite_floating_point(settings):
    assert 4.1 - 3.1 < PAIR_THRESHOLD  # what the rounding is for
    row = _row(4.1, 3.1)
    assert _compared(row, _made(row, settings)[0]) == [(0, 1)]
    pairs, rejected = _made(_row(4.1, 3.15), settings)
    assert not pairs and [r.reasons for r in rejected] == [["no_clear_preference"]]


def test_ties_for_the_best_are_broken_by_overall_score_then_position(settings):
    by_overall = _row((4.0, 6.0), (4.0, 8.0), (2.5, 9.0))
    assert _compared(by_overall, _made(by_overall, settings)[0]) == [(1, 2)]
    by_position = _row((2.0, 9.0), (4.0, 8.0), (4.0, 8.0))
    assert _compared(by_position, _made(by_position, settings)[0]) == [(1, 0)]


def test_a_row_whose_completions_all_tie_makes_no_pair_and_says_why(settings):
    pairs, rejected = _made(_row(4.0, 3.25, 3.5, 4.0), settings)
    assert pairs == [] and len(rejected) == 1
    assert rejected[0].reasons == ["no_clear_preference"] and "4" in rejected[0].detail


@pytest.mark.parametrize("change,reason", [
    ({"response": "  \n "}, "completion_response_empty"),
    ({"response": "\u200b\ufeff"}, "completion_response_empty"),
    ({"response": None}, "completion_response_empty"),
    ({"fine-grained_score": None}, "completion_score_invalid:fine-grained_score"),
    ({"fine-grained_score": "N/A"}, "completion_score_invalid:fine-grained_score"),
    ({"fine-grained_score": True}, "completion_score_invalid:fine-grained_score"),
    ({"fine-grained_score": 7.5}, "completion_score_out_of_range:fine-grained_score"),
    ({"overall_score": "ten"}, "completion_score_invalid:overall_score"),
])
def test_an_unusable_completion_is_rejected_by_name_and_the_others_still_pair(settings, change, reason):
    row = _row(4.5, 3.0, 2.0)
    row["completions"][1].update(change)
    if change.get("fine-grained_score", 0) is None:
        del row["completions"][1]["fine-grained_score"]  # missing, not null
    pairs, rejected = _made(row, settings)
    assert [r.reasons for r in rejected] == [[reason]] and "completion 1 (model-1)" in rejected[0].detail
    assert _compared(row, pairs) == [(0, 2)]


def test_a_completion_that_is_no_object_and_too_few_usable_ones(settings):
    row = _row(4.5, 2.0)
    row["completions"][0] = "just text"
    pairs, rejected = _made(row, settings)
    assert pairs == []
    assert [r.reasons for r in rejected] == [["completion_not_an_object"], ["fewer_than_two_completions"]]
    assert [r.reasons for r in _made(_row(4.0), settings)[1]] == [["fewer_than_two_completions"]]


def test_human_label_is_the_difference_from_a_s_side_and_a_is_drawn_by_hash(settings):
    signs = set()
    for i in range(40):
        row = _row(5.0, 3.75, 1.0, instruction=f"question {i}")
        pairs, _ = _made(row, settings)
        for p in pairs:
            better, worse = _compared(row, [p])[0]
            texts = {k: c["response"] for k, c in enumerate(row["completions"])}
            difference = min(5.0 - row["completions"][worse]["fine-grained_score"], HUMAN_LABEL_MAX)
            a_better = p.response_a == texts[better]
            assert {p.response_a, p.response_b} == {texts[better], texts[worse]}
            assert p.human_label == (difference if a_better else -difference)
            assert clear_human_direction(p.source, p.human_label, p.both_bad, known_facts()) == ("a" if a_better else "b")
            a, b = (better, worse) if a_better else (worse, better)
            assert p.raw_label.startswith(f"fine-grained {row['completions'][a]['fine-grained_score']:g} vs "
                                          f"{row['completions'][b]['fine-grained_score']:g}")
            assert (p.metadata[MODEL_A], p.metadata[MODEL_B]) == (f"model-{a}", f"model-{b}")
            signs.add(a_better)
    assert signs == {True, False}  # neither side always wins
    assert any(abs(p.human_label) == HUMAN_LABEL_MAX for p in _made(_row(5.0, 1.0), settings)[0])  # 4.0, capped


def test_the_same_row_makes_the_same_pairs_every_time(settings):
    row = _row(4.5, 3.0, 2.0, 4.25)
    first, again = _made(row, settings)[0], _made(dict(row), settings)[0]
    assert [(p.source_id, p.response_a, p.human_label) for p in first] == \
        [(p.source_id, p.response_a, p.human_label) for p in again]


def test_model_names_fall_back_to_the_row_s_models_list(settings):
    row = _row(4.5, 2.0)
    for c in row["completions"]:
        del c["model"]
    row["models"] = ["alpha-7b", "beta-13b"]
    (pair,), _ = _made(row, settings)
    assert {pair.metadata[MODEL_A], pair.metadata[MODEL_B]} == {"alpha-7b", "beta-13b"}


def test_a_row_lands_its_pairs_and_one_quarantine_record_for_its_bad_parts(settings):
    bad = _row(4.5, 3.0, 2.0, 4.0)
    bad["completions"][3]["response"] = ""
    rows = [bad, _row(4.0, 3.75), {**_row(4.0, 1.0), "completions": "four answers"}, _row(5.0, 2.0, instruction="Hi?")]
    prepared = prepare_batch(RawBatch("train", rows, ["f:1", "f:2", "f:3", "f:4"]), SRC, settings, "f")
    assert len(prepared.pairs) == 3 and len(set(prepared.pair_ids)) == 3
    by_position = {q.position: q for q in prepared.quarantined}
    assert set(by_position) == {"f:1", "f:2", "f:3"}
    assert by_position["f:1"].reasons == ["completion_response_empty"]
    assert by_position["f:1"].source_id == source_id(bad)  # the row's id: the record is the row's
    assert by_position["f:2"].reasons == ["no_clear_preference"]
    assert by_position["f:3"].stage == "raw" and by_position["f:3"].reasons == ["completions:is_list"]
    assert (prepared.flags["rows_paired"], prepared.flags["rows_partly_quarantined"]) == (2, 1)


def test_the_source_declares_its_facts():
    assert (SRC.hub_id, SRC.config, SRC.splits, SRC.license) == ("openbmb/UltraFeedback", None, ("train",), "mit")
    assert SRC.names_models and SRC.clear_label <= PAIR_THRESHOLD  # every pair the rule makes is a clear one


def _prepared(rows, settings, path=None):
    """The rows through the ingest's preparation; written as JSONL text and read back by the reader when `path`
    is given (so that `NaN` and `1e309` literals are parsed as a file's would be)."""
    if path is None:
        return prepare_batch(RawBatch("train", rows, [f"f:{k + 1}" for k in range(len(rows))]), SRC, settings, "f")
    from tasks.ingest.read import read_local

    path.write_text("".join(r + "\n" for r in rows))
    [batch] = list(read_local(path, 100))
    return prepare_batch(batch, SRC, settings, str(path))


def test_a_row_of_5000_completions_pairs_only_the_first_ones_and_says_so(settings):
    """Without a cap one such row made 3,761 pairs of one prompt."""
    from common.settings import settings_with

    row = _row(5.0, *[2.0] * 4999)
    cap = settings.max_completions_per_row
    assert cap == 16
    pairs, rejected = _made(row, settings)
    assert _compared(row, pairs) == [(0, k) for k in range(1, cap)]
    assert [r.reasons for r in rejected] == [[f"completions_over_cap(<={cap})"]]
    assert "5000 completions" in rejected[0].detail and "positions 16 and after" in rejected[0].detail
    prepared = _prepared([row], settings)
    assert len(prepared.pairs) == cap - 1
    [record] = prepared.quarantined
    assert (record.stage, record.reasons, record.source_id) == ("adapter", ["completions_over_cap(<=16)"], source_id(row))
    # a better completion past the cap is not looked at; a smaller cap pairs fewer
    late_best = _row(4.0, 2.5, *[3.5] * 18, 5.0)
    assert _compared(late_best, _made(late_best, settings)[0]) == [(0, 1)]
    pairs, _ = _made(row, settings_with(max_completions_per_row=3))
    assert _compared(row, pairs) == [(0, 1), (0, 2)]


def test_a_nan_or_infinite_score_is_that_completions_fault_and_the_rows_other_pairs_land(settings, tmp_path):
    import json

    good = json.dumps(_row(5.0, 3.0, 2.0, 4.5))
    nan = good.replace('"fine-grained_score": 2.0', '"fine-grained_score": NaN')  # completion 2
    inf = good.replace('"overall_score": 7.0, "annotations": {"helpfulness": {"Rating": "4", "Rationale": "fine"}}, '
                       '"critique": "ok", "custom_system_prompt": "You are helpful.", "principle": "helpfulness"}, '
                       '{"model": "model-2"',
                       '"overall_score": 1e309, "annotations": {"helpfulness": {"Rating": "4", "Rationale": "fine"}}, '
                       '"critique": "ok", "custom_system_prompt": "You are helpful.", "principle": "helpfulness"}, '
                       '{"model": "model-2"')  # completion 1
    both = nan.replace('"Rating": "4"', '"Rating": -1e400', 1)  # and completion 0's rating: the best is lost
    beside = good.replace('"correct_answers": ["None"]', '"correct_answers": [NaN]')  # the row's own field
    assert len({good, nan, inf, both, beside}) == 5
    prepared = _prepared([good, nan, inf, both, beside], settings, tmp_path / "uf.jsonl")
    records = {q.position.rsplit(":", 1)[1]: q for q in prepared.quarantined}
    assert set(records) == {"2", "3", "4", "5"}
    assert (records["2"].stage, records["2"].reasons) == ("adapter", ["completion_not_finite:fine-grained_score"])
    assert "completion 2 (model-2)" in records["2"].detail
    assert (records["3"].stage, records["3"].reasons) == ("adapter", ["completion_not_finite:overall_score"])
    assert records["4"].reasons == ["completion_not_finite:annotations", "completion_not_finite:fine-grained_score"]
    assert (records["5"].stage, records["5"].reasons) == ("raw", ["not_finite:correct_answers"])  # not weakened
    made = Counter(p.source_id.split(":")[0] for p in prepared.pairs)
    rows = [json.loads(t) for t in (good, nan, inf, both)]
    # the good row pairs 0 with 1 and 2; without completion 2 or 1 the other pair lands; without 0 the next
    # best (3, 4.5) pairs with 1 and 2 of which only 1 is usable
    assert [made[source_id(r)] for r in rows] == [2, 1, 1, 1]
    assert all(v is None or math.isfinite(v) for p in prepared.pairs for rating in p.metadata["ratings"]
               for v in rating.values() if not isinstance(v, str))


def test_the_row_wide_check_still_quarantines_a_nan_anywhere_for_the_other_sources(settings):
    from schemas.checks import value_faults

    nested = {"completions": [{"fine-grained_score": float("nan")}], "context": [{"content": float("inf")}]}
    assert value_faults(nested) == ["not_finite:completions", "not_finite:context"]
    assert value_faults(nested, finite_checked_elsewhere=("completions",)) == ["not_finite:context"]
    assert {s.name for s in SOURCES.values() if s.finite_checked_by_adapter} == {"ultrafeedback"}
