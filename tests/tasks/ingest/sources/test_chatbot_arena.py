from schemas.pair import CandidatePair, Rejection
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import RawBatch
from tasks.ingest.sources import AdapterContext, get_source

SRC = get_source("chatbot-arena")


def _row(**kw):
    row = {"question_id": "q1", "model_a": "vicuna", "model_b": "alpaca", "winner": "tie (bothbad)",
           "conversation_a": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
           "conversation_b": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey there"}],
           "turn": 1, "anony": True, "language": "English", "tstamp": 1.0}
    row.update(kw)
    return row


def test_lmsys_row_maps_to_pair(settings):
    (pair,) = SRC.adapt(_row(), AdapterContext(settings, "train", "x"))
    assert isinstance(pair, CandidatePair)
    assert pair.both_bad and pair.human_label == 0.0 and pair.source == "chatbot-arena"
    assert (pair.response_a, pair.response_b) == ("hello", "hey there")


def test_multi_turn_divergent_is_rejected(settings):
    conv = lambda a: [{"role": "user", "content": "hi"}, {"role": "assistant", "content": a},  # noqa: E731
                      {"role": "user", "content": "more"}, {"role": "assistant", "content": a + "!"}]
    (result,) = SRC.adapt(_row(conversation_a=conv("x"), conversation_b=conv("y")), AdapterContext(settings, "train", "x"))
    assert isinstance(result, Rejection)


def test_bad_winner_is_quarantined_by_the_raw_schema(settings):
    prepared = prepare_batch(RawBatch("train", [_row(winner="model_c"), _row(question_id="q2")], ["a", "b"]), SRC, settings, "t")
    assert len(prepared.pairs) == 1
    assert prepared.quarantined[0].reasons == ["winner:in(model_a|model_b|tie|tie (bothbad))"]
