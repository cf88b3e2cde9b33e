"""Bad rows of every kind are quarantined with the right reason while the good rows around them land."""

from collections import Counter

import pytest

from schemas.pair import CandidatePair, Rejection
from tasks.ingest import normalize as nz
from tasks.ingest.prepare import prepare_batch
from tasks.ingest.read import RawBatch, read_jsonl
from tasks.ingest.sources import get_source
from tasks.ingest.synth import SynthManifest, synth_class, write_synth
from tasks.ingest.validate import MissingColumnsError


@pytest.mark.parametrize("kind", ["helpsteer3", "arena"])
def test_every_planted_bad_row_is_quarantined_with_its_reason(tmp_path, settings, kind):
    path = tmp_path / f"{kind}.jsonl"
    n = 2400 if kind == "helpsteer3" else 1400
    m = write_synth(path, kind, n, seed=7, pair_bytes=1200, bad_rate=0.1)
    assert len(m.bad_rows) >= 100 and len({k for k, _ in m.bad_rows.values()}) >= 10

    quarantined = {}
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
    assert set(Counter(k for k, _ in m.bad_rows.values())) == set(synth_class(kind).BAD_KINDS)


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


# -- a source that makes several pairs of a row ---------------------------------------------------------------
def _several(row, ctx):
    """One pair per answer after the first, each against the first; a `bad` answer is a rejected part."""
    first, *others = row["answers"]
    for k, answer in enumerate(others, start=1):
        if answer == "bad":
            yield Rejection(["answer_unusable"], f"answer {k}")
            continue
        yield CandidatePair("several", f"{row['id']}:0>{k}", [{"role": "user", "content": row["q"]}], first, answer,
                            human_label=1.0)


def _several_source(adapt=_several):
    import dataclasses

    import pandera.pandas as pa

    return dataclasses.replace(get_source("helpsteer3"), name="several", adapt=adapt, source_id=lambda r: r["id"],
                               raw_schema=pa.DataFrameSchema({"id": pa.Column(None)}, strict=False))


def _prepare(rows, source, settings):
    return prepare_batch(RawBatch("train", rows, [f"f:{i + 1}" for i in range(len(rows))]), source, settings, "f")


def test_a_row_may_make_several_pairs_each_with_its_own_source_id(settings):
    rows = [{"id": "r1", "q": "q1", "answers": ["a", "b", "c"]}, {"id": "r2", "q": "q2", "answers": ["a", "d"]}]
    prepared = _prepare(rows, _several_source(), settings)
    assert [p.source_id for p in prepared.pairs] == ["r1:0>1", "r1:0>2", "r2:0>1"]
    assert len(set(prepared.pair_ids)) == 3 and not prepared.quarantined
    assert (prepared.read, prepared.flags["rows_paired"], prepared.flags["rows_partly_quarantined"]) == (2, 2, 0)


def test_a_row_s_failed_parts_share_one_quarantine_record_keyed_by_the_row(settings):
    rows = [{"id": "r1", "q": "q1", "answers": ["a", "bad", "a", "c", "bad"]},  # adapter and pair stage both refuse
            {"id": "r2", "q": "q2", "answers": ["a", "bad"]}]  # nothing left: the whole row
    prepared = _prepare(rows, _several_source(), settings)
    assert [p.source_id for p in prepared.pairs] == ["r1:0>3"]
    first, second = prepared.quarantined
    assert (first.position, first.stage, first.source_id) == ("f:1", "adapter", "r1")
    assert first.reasons == ["answer_unusable", "responses_differ"]  # each reason once, the stages in order
    assert "answer 1" in first.detail and "answer 4" in first.detail and "r1:0>2" in first.detail
    assert first.row_hash == nz.row_hash(rows[0])
    assert (second.position, second.reasons) == ("f:2", ["answer_unusable"])
    assert (prepared.flags["rows_paired"], prepared.flags["rows_partly_quarantined"]) == (1, 1)


def test_an_adapter_that_makes_nothing_or_fails_part_way_loses_no_row(settings):
    def nothing(row, ctx):
        return iter(())

    def part_way(row, ctx):
        yield from _several(row, ctx)
        raise ValueError("late")

    row = {"id": "r1", "q": "q1", "answers": ["a", "b"]}
    (silent,) = _prepare([row], _several_source(nothing), settings).quarantined
    assert silent.reasons == ["adapter_made_nothing"]
    failed = _prepare([row], _several_source(part_way), settings)
    assert failed.pairs == [] and [q.reasons for q in failed.quarantined] == [["adapter_error:ValueError"]]


def test_a_pair_too_long_for_the_judge_says_its_size(settings):
    budget_bytes = settings.judge_input_budget * 8  # the ingest's rule: 8 UTF-8 bytes a token at most
    row = {"domain": "general", "language": "English", "context": [{"role": "user", "content": "q"}],
           "response1": "a" * budget_bytes, "response2": "b", "overall_preference": -1}
    prepared = prepare_batch(RawBatch("train", [row], ["x:1"]), get_source("helpsteer3"), settings, "x")
    (record,) = prepared.quarantined
    assert any(r.startswith("utf8_bytes:fits_judge_context") for r in record.reasons)
    assert record.detail == f"{budget_bytes + 2} bytes of text"
