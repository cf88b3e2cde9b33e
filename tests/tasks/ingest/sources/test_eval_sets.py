from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import RawBatch
from tasks.ingest.sources import get_source
from tests.conftest import read_jsonl, shared_file


def test_rmbench_fixture_prompts_keyed_by_domain_and_id(settings):
    rows = read_jsonl(shared_file("rmbench", "fixtures.jsonl"))
    prepared = prepare_batch(RawBatch("train", rows, [str(i) for i in range(len(rows))]), get_source("rm-bench"), settings, "f")
    assert not prepared.quarantined
    ids = [p.benchmark_id for p in prepared.prompts]
    assert len(ids) == len(rows) == len(set(ids))  # chat and code ids overlap; domain:id does not
    assert all(":" in i for i in ids)


def test_judgebench_fixture_prompts(settings):
    rows = read_jsonl(shared_file("judgebench", "fixtures.jsonl"))
    prepared = prepare_batch(RawBatch("gpt", rows, [str(i) for i in range(len(rows))]), get_source("judgebench"), settings, "f")
    assert len(prepared.prompts) == len(rows)
    assert prepared.prompts[0].prompt == rows[0]["question"]
