"""Bad rows of every kind are quarantined with the right reason while the good rows around them land."""

from collections import Counter

import pytest

from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import RawBatch, read_jsonl
from tasks.ingest.sources import get_source
from tasks.ingest.synth import BAD_KINDS, SynthManifest, write_synth
from tasks.ingest.validate import MissingColumnsError


@pytest.mark.parametrize("kind", ["helpsteer3", "arena"])
def test_every_planted_bad_row_is_quarantined_with_its_reason(tmp_path, settings, kind):
    path = tmp_path / f"{kind}.jsonl"
    n = 2400 if kind == "helpsteer3" else 1400
    m = write_synth(path, kind, n, seed=7, pair_bytes=1200, bad_rate=0.1)
    assert len(m.bad_rows) >= 100 and len({k for k, _ in m.bad_rows.values()}) >= 10

    quarantined, good_lines = {}, set()
    for batch in read_jsonl(path, batch_size=500):
        prepared = prepare_batch(batch, get_source(kind), settings, str(path))
        for q in prepared.quarantined:
            quarantined[int(q.position.rsplit(":", 1)[1]) - 1] = q
        assert len(prepared.pairs) + len(prepared.quarantined) == len(batch)

    wrong = {}
    for row, (bad_kind, reason) in m.bad_rows.items():
        q = quarantined.get(row)
        if q is None or not any(r.startswith(reason) for r in q.reasons):
            wrong[row] = (bad_kind, reason, q.reasons if q else None)
    assert not wrong
    extra = set(quarantined) - set(m.bad_rows)
    assert not extra, {r: quarantined[r].reasons for r in extra}
    # every kind was exercised
    assert set(Counter(k for k, _ in m.bad_rows.values())) == set(BAD_KINDS[kind])


def test_at_least_200_bad_rows_of_10_kinds_across_sources(tmp_path, settings):
    total, kinds = 0, set()
    for kind, seed in (("helpsteer3", 1), ("arena", 2)):
        path = tmp_path / f"{kind}.jsonl"
        m = write_synth(path, kind, 1200, seed=seed, pair_bytes=800, bad_rate=0.1)
        total += len(m.bad_rows)
        kinds |= {k for k, _ in m.bad_rows.values()}
        quarantined = 0
        for batch in read_jsonl(path, batch_size=300):
            quarantined += len(prepare_batch(batch, get_source(kind), settings, str(path)).quarantined)
        assert quarantined == len(m.bad_rows)
    assert total >= 200 and len(kinds) >= 10


def test_a_file_of_another_source_is_refused_naming_the_columns(settings):
    rows = [{"prompt": f"p{i}", "chosen": "a", "rejected": "b"} for i in range(20)]
    with pytest.raises(MissingColumnsError) as info:
        prepare_batch(RawBatch("train", rows, [str(i) for i in range(20)]), get_source("helpsteer3"), settings, "x.jsonl")
    assert "x.jsonl" in str(info.value) and "context" in str(info.value) and "response1" in str(info.value)


def test_adapter_crash_is_quarantined_not_raised(settings, monkeypatch):
    src = get_source("helpsteer3")
    import dataclasses

    def boom(row, ctx):
        raise KeyError("surprise")

    broken = dataclasses.replace(src, adapt=boom)
    row = {"domain": "general", "language": "english", "context": [{"role": "user", "content": "q"}],
           "response1": "a", "response2": "b", "overall_preference": 1}
    prepared = prepare_batch(RawBatch("train", [row], ["x:1"]), broken, settings, "x")
    assert prepared.quarantined[0].reasons == ["adapter_error:KeyError"]


def test_manifest_round_trips(tmp_path):
    m = write_synth(tmp_path / "s.jsonl", "arena", 200, seed=3)
    again = SynthManifest.from_json((tmp_path / "s.jsonl.manifest.json").read_text())
    assert again == m
