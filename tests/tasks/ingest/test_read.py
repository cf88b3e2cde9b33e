import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.ingest import read as rd


def _rows(n, start=0):
    return [{"id": str(i), "x": i} for i in range(start, start + n)]


def test_jsonl_bad_lines_are_named_and_the_rest_kept(tmp_path):
    path = tmp_path / "in.jsonl"
    lines = [json.dumps(r) for r in _rows(5)]
    lines.insert(2, '{"id": "broken"')
    lines.insert(4, "[1, 2]")
    lines.insert(5, "")
    path.write_text("\n".join(lines) + "\n")
    batches = list(rd.read_jsonl(path, batch_size=3))
    rows = [r for b in batches for r in b.rows]
    bad = [u for b in batches for u in b.unreadable]
    assert [r["id"] for r in rows] == ["0", "1", "2", "3", "4"]
    assert [(u.position, u.reason) for u in bad] == [("in.jsonl:3", "malformed_json"), ("in.jsonl:5", "not_an_object")]
    assert bad[0].text == '{"id": "broken"'


def test_jsonl_keeps_lone_surrogates_for_validation_to_name(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"t": "a\\ud800b"}\n')
    (batch,) = rd.read_jsonl(path, 10)
    assert batch.rows[0]["t"] == "a\ud800b"


def test_gzipped_jsonl_and_truncated_gzip(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    with gzip.open(path, "wt") as f:
        for r in _rows(50):
            f.write(json.dumps(r) + "\n")
    assert sum(len(b.rows) for b in rd.read_local(path, 20)) == 50
    data = path.read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(rd.SourceReadError, match="cut.jsonl.gz"):
        list(rd.read_local(cut, 20))


def test_parquet_through_datasets(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(25)), path)
    batches = list(rd.read_local(path, 10))
    assert [len(b.rows) for b in batches] == [10, 10, 5]
    assert batches[0].positions[0] == "in.parquet[train][0]" and batches[2].positions[-1] == "in.parquet[train][24]"
    assert rd.count_rows(path) == 25


def test_stopping_a_datasets_read_early_closes_it_cleanly(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(25)), path)
    limited = list(rd.limit_rows(rd.read_local(path, 10), 12))
    assert [len(b) for b in limited] == [10, 2]


def test_truncated_parquet_is_a_clear_error(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(100)), path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(rd.SourceReadError, match="in.parquet.*not a readable Parquet"):
        list(rd.read_local(path, 10))


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(rd.SourceReadError, match="no such file"):
        list(rd.read_local(tmp_path / "nope.jsonl", 10))
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(rd.SourceReadError, match="unknown format"):
        list(rd.read_local(tmp_path / "x.csv", 10))


def test_hub_layout_read_offline_through_the_same_code(tmp_path):
    """A folder laid out like the Hub repo (config `preference`, two splits), read like the Hub."""
    repo = tmp_path / "HelpSteer3"
    (repo / "preference").mkdir(parents=True)
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: preference\n  data_files:\n  - split: train\n    path: preference/train.jsonl\n"
        "  - split: validation\n    path: preference/validation.jsonl\n---\n"
    )
    (repo / "preference" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(7)))
    (repo / "preference" / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(3, 100)))
    batches = list(rd.read_source(str(repo), "preference", ("train", "validation"), path=None, revision=None,
                                  batch_size=5, retries=0, retry_wait=0))
    assert [(b.split, len(b.rows)) for b in batches] == [("train", 5), ("train", 2), ("validation", 3)]


def test_hub_read_resumes_after_a_dropped_connection(monkeypatch):
    rows = _rows(12)
    calls = []

    class FakeStream:
        def __init__(self, start):
            self.start = start

        def skip(self, n):
            return FakeStream(self.start + n)

        def iter(self, batch_size):
            fail_at = 8 if len(calls) == 1 else None
            for i in range(self.start, len(rows), batch_size):
                if fail_at is not None and i >= fail_at:
                    raise ConnectionError("connection reset by peer")
                chunk = rows[i : i + batch_size]
                yield {"id": [r["id"] for r in chunk], "x": [r["x"] for r in chunk]}

    import datasets

    def fake_load(path, name=None, **kw):
        calls.append(kw)
        return FakeStream(0)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    waits = []
    got = [r["x"] for b in rd.read_with_datasets("org/ds", batch_size=4, retries=3, retry_wait=1.5, sleep=waits.append)
           for r in b.rows]
    assert got == list(range(12))  # every row once, none lost or repeated
    assert len(calls) == 2 and waits == [1.5]


def test_hub_read_gives_up_with_a_clear_error(monkeypatch):
    import datasets

    def fake_load(*a, **kw):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    waits = []
    with pytest.raises(rd.SourceReadError, match="org/ds.*after 0 rows"):
        list(rd.read_with_datasets("org/ds", batch_size=4, retries=2, retry_wait=1, sleep=waits.append))
    assert waits == [1, 2]


def test_limit_rows():
    batches = [rd.RawBatch("train", _rows(4), list("abcd")), rd.RawBatch("train", _rows(4, 4), list("efgh"))]
    assert [len(b) for b in rd.limit_rows(iter(batches), 6)] == [4, 2]


def test_revision_and_row_count_come_from_one_read_and_follow_the_file(tmp_path):
    import hashlib
    import os

    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows(3)))
    expected = "file:" + hashlib.blake2b(path.read_bytes(), digest_size=10).hexdigest()
    assert rd.file_revision(path) == expected and rd.count_rows(path) == 3
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows(4)))
    os.utime(path, ns=(1, 1))  # a new modification time as well as a new size
    assert rd.count_rows(path) == 4
    assert rd.file_revision(path) == "file:" + hashlib.blake2b(path.read_bytes(), digest_size=10).hexdigest() != expected
