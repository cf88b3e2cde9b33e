from schemas.pair import CandidatePair
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import RawBatch
from tasks.ingest.sources import AdapterContext, get_source
from tests.conftest import read_jsonl, shared_file

SRC = get_source("helpsteer3")


def test_real_sample_rows_map_to_pairs(settings):
    rows = read_jsonl(shared_file("helpsteer3", "sample.jsonl"))
    assert len(rows) == 2
    prepared = prepare_batch(RawBatch("train", rows, ["sample:1", "sample:2"]), SRC, settings, "sample")
    assert not prepared.quarantined
    single, multi = prepared.pairs
    assert single.history[-1]["role"] == "user" and len(single.history) == 1
    assert len(multi.history) == 7  # the card's multi-turn example
    # overall_preference -2 (response1 better) -> +2 from response A's side
    assert single.human_label == 2.0 and single.raw_label == "-2"
    assert single.response_a.startswith("Here's a JavaScript program")
    assert single.domain == "code" and single.language == "en"  # code prompts are English
    assert single.metadata["programming_language"] == "javascript_html_css"
    assert [p["score"] for p in single.metadata["individual_preference"]] == [-1, -3, -2]
    assert len(set(prepared.pair_ids)) == 2


def test_source_id_is_a_stable_content_hash():
    row = {"context": [{"role": "user", "content": "q"}], "response1": "a", "response2": "b", "overall_preference": 1}
    assert SRC.source_id(row) == SRC.source_id(dict(row))
    assert SRC.source_id(row) != SRC.source_id({**row, "overall_preference": 2})


def test_label_sign_follows_response_a(settings):
    row = {"domain": "general", "language": "english", "context": [{"role": "user", "content": "q"}],
           "response1": "a", "response2": "b", "overall_preference": 3}
    (pair,) = SRC.adapt(row, AdapterContext(settings, "train", "x"))
    assert isinstance(pair, CandidatePair) and pair.human_label == -3.0
