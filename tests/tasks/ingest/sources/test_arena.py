import copy

import pytest

from common.settings import MultiTurnPolicy, Settings
from schemas.pair import CandidatePair, Rejection
from tasks.ingest.normalize import normalize_pair
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import RawBatch
from tasks.ingest.sources import AdapterContext, get_source
from tests.conftest import read_jsonl, shared_file

SRC = get_source("arena")


def _ctx(settings=None):
    return AdapterContext(settings or Settings(), "train", "t:1")


def _msg(role, text):
    return {"role": role, "content": [{"type": "text", "text": text, "image": None, "mimeType": None}]}


def _row(winner="model_a", turns=(("q", "A", "B"),), full=True):
    conv_a, conv_b, fc = [], [], []
    for user, a, b in turns:
        conv_a += [_msg("user", user), _msg("assistant", a)]
        conv_b += [_msg("user", user), _msg("assistant", b)]
        fc.append({"user": _msg("user", user), "model_side_a": _msg("assistant", a), "model_side_b": _msg("assistant", b)})
    row = {"id": "r1", "model_a": "m1", "model_b": "m2", "winner": winner, "conversation_a": conv_a,
           "conversation_b": conv_b, "language": "en", "is_code": False}
    if full:
        row["full_conversation"] = fc
    return row


@pytest.mark.parametrize("winner,label,both_bad", [("model_a", 1.0, False), ("model_b", -1.0, False),
                                                   ("tie", 0.0, False), ("both_bad", 0.0, True)])
def test_winner_maps_to_label_from_a_side(winner, label, both_bad):
    (pair,) = SRC.adapt(_row(winner), _ctx())  # one vote, one pair
    assert isinstance(pair, CandidatePair)
    assert (pair.human_label, pair.both_bad, pair.raw_label) == (label, both_bad, winner)
    assert pair.history == [{"role": "user", "content": "q"}] and (pair.response_a, pair.response_b) == ("A", "B")


def test_image_parts_are_rejected_with_that_reason():
    row = _row()
    row["full_conversation"][0]["user"]["content"].append({"type": "image", "text": None, "image": "x.png", "mimeType": "image/png"})
    (result,) = SRC.adapt(row, _ctx())
    assert isinstance(result, Rejection) and result.reasons == ["non_text_content:image"]


def test_multi_turn_rule_strict_and_last_turn():
    row = _row(turns=(("q1", "A1", "B1"), ("q2", "A2", "B2")))
    (strict,) = SRC.adapt(row, _ctx())
    assert isinstance(strict, Rejection) and strict.reasons == ["multi_turn_divergent_history"]
    (lenient,) = SRC.adapt(row, _ctx(Settings(arena_multiturn=MultiTurnPolicy.last_turn)))
    assert isinstance(lenient, CandidatePair)
    assert lenient.history == [{"role": "user", "content": "q2"}] and lenient.metadata["context_dropped"]
    # both sides said the same first answer: the full shared history is kept
    (agree,) = SRC.adapt(_row(turns=(("q1", "same", "same"), ("q2", "A2", "B2"))), _ctx())
    assert isinstance(agree, CandidatePair) and [m["content"] for m in agree.history] == ["q1", "same", "q2"]


def test_history_comes_from_full_conversation_of_earlier_votes():
    row = _row(turns=(("earlier", "X", "Y"), ("now", "A", "B")))
    # conversation_a/b hold only the current vote's turns
    row["conversation_a"], row["conversation_b"] = row["conversation_a"][2:], row["conversation_b"][2:]
    (with_earlier,) = SRC.adapt(row, _ctx())
    (without,) = SRC.adapt({k: v for k, v in row.items() if k != "full_conversation"}, _ctx())
    assert isinstance(with_earlier, Rejection)  # earlier answers differ: divergent
    assert isinstance(without, CandidatePair)


def test_und_language_becomes_unknown():
    row = _row()
    row["language"] = "und"
    (pair,) = SRC.adapt(row, _ctx())
    pair = normalize_pair(pair)
    assert pair.language is None and pair.metadata["language_raw"] == "und"


def test_real_fixture_rows_all_accounted_for(settings):
    rows = read_jsonl(shared_file("arena", "fixtures.jsonl"))
    batch = RawBatch("train", copy.deepcopy(rows), [f"fixtures:{i + 1}" for i in range(len(rows))])
    prepared = prepare_batch(batch, SRC, settings, "fixtures")
    assert len(prepared.pairs) + len(prepared.quarantined) == len(rows)
    # every quarantined row says why, and the only reasons on real rows are the multi-turn rule or size
    for q in prepared.quarantined:
        assert q.reasons and all(r in ("multi_turn_divergent_history",) or r.startswith("utf8_bytes:") for r in q.reasons), q.reasons
    divergent = sum("multi_turn_divergent_history" in q.reasons for q in prepared.quarantined)
    assert divergent == prepared.multi_turn["quarantined_divergent"] > 0
    # single-vote, single-turn rows all become pairs
    simple = [r for r in rows if r["evaluation_order"] == 1 and len(r["conversation_a"]) == 2]
    assert len(prepared.pairs) >= len(simple) - sum(q.reasons[0].startswith("utf8_bytes") for q in prepared.quarantined)
    by_id = {p.source_id: p for p in prepared.pairs}
    for r in simple:
        if r["id"] in by_id:
            p = by_id[r["id"]]
            assert p.response_a == r["conversation_a"][1]["content"][0]["text"].strip()
            assert p.raw_label == r["winner"]
