import numpy as np

from tasks.ingest.dedup import NearDupIndex, first_occurrences, near_dup_text
from tasks.ingest.synth_rows import TextMaker


def test_first_occurrences():
    assert first_occurrences(["a", "b", "a", "c", "b", "a"]) == [None, None, 0, None, 1, 0]


def test_near_dup_text_is_order_independent():
    h = [{"role": "user", "content": "q"}]
    assert near_dup_text(h, "x", "y") == near_dup_text(h, "y", "x")


def test_index_finds_near_duplicates_within_and_across_batches_and_keeps_stars():
    tm = TextMaker(11)
    originals = [tm.text(3000) for _ in range(200)]
    index = NearDupIndex(256, 0.8)
    ids1 = [f"o{i}" for i in range(200)]
    v1 = index.assign(ids1, index.signatures_of(originals))
    assert v1.duplicate_of == [None] * 200  # unrelated texts
    # a later batch: light edits of 50 originals, their own near copies, and 50 fresh texts
    edited = [tm.edit(originals[i], 0.01) for i in range(50)]
    fresh = [tm.text(3000) for _ in range(50)]
    copy_of_fresh = [tm.edit(fresh[0], 0.01)]
    texts = edited + fresh + copy_of_fresh
    ids2 = [f"e{i}" for i in range(50)] + [f"f{i}" for i in range(50)] + ["c0"]
    v2 = index.assign(ids2, index.signatures_of(texts))
    assert v2.duplicate_of[:50] == [f"o{i}" for i in range(50)]
    assert v2.duplicate_of[50:100] == [None] * 50
    assert v2.duplicate_of[100] == "f0"  # within the batch, against a member kept earlier in it
    assert all(s >= 0.8 for s in v2.similarity[:50])
    assert len(index) == 250  # kept members only


def test_index_round_trips_signatures():
    tm = TextMaker(2)
    index = NearDupIndex(128, 0.8)
    sigs = index.signatures_of([tm.text(1000) for _ in range(10)])
    index.add([str(i) for i in range(10)], sigs)
    other = NearDupIndex(128, 0.8)
    other.add(index.ids, np.frombuffer(sigs.astype("<u4").tobytes(), "<u4").reshape(10, 128))
    assert other.assign(["x"], sigs[:1]).duplicate_of == ["0"]


def test_merged_segments_equal_one_built_at_once():
    from tasks.ingest.dedup import _Segment

    rng = np.random.default_rng(3)
    keys = rng.integers(0, 5, (40, 6), dtype=np.uint64)  # few distinct keys: many ties, kept in doc order
    parts = [_Segment.of(keys[a:b], a) for a, b in ((0, 7), (7, 8), (8, 31), (31, 40))]
    merged, whole = _Segment.merged(parts), _Segment.of(keys, 0)
    for band in range(6):
        assert np.array_equal(merged.keys[band], whole.keys[band])
        assert np.array_equal(merged.docs[band], whole.docs[band])


def test_index_keeps_signatures_across_blocks_and_merged_segments(monkeypatch):
    import tasks.ingest.dedup as dedup

    monkeypatch.setattr(dedup, "_BLOCK_DOCS", 16)
    tm = TextMaker(5)
    texts = [tm.text(400) for _ in range(120)]
    index = NearDupIndex(64, 0.8)
    sigs = index.signatures_of(texts)
    for start in range(0, 120, 6):  # 20 batches: more than 16 segments, merged into one
        assert index.assign([f"d{i}" for i in range(start, start + 6)], sigs[start : start + 6]).duplicate_of == [None] * 6
    assert len(index._segments) < 16
    edited = index.signatures_of([tm.edit(texts[i], 0.01) for i in (0, 17, 50, 119)])
    assert index.assign(["x0", "x17", "x50", "x119"], edited).duplicate_of == ["d0", "d17", "d50", "d119"]


def test_sorted_unique_is_np_unique():
    from common.arrays import sorted_unique

    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 50, 3000):
        for dtype in (np.int64, np.uint64):
            values = rng.integers(0, 40, n).astype(dtype)
            assert np.array_equal(sorted_unique(values), np.unique(values))
            assert sorted_unique(values).dtype == dtype
