import gzip
import json
import zlib

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


# -- damaged files: every readable row first, then one error saying where ---------------------------------------


def _gzipped_rows(path, n):
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in _rows(n)).encode())
    path.write_bytes(data)
    return data


def _read_until_damage(path, batch_size=7):
    """(ids of the rows read, the SourceDamagedError raised after them)."""
    ids = []
    with pytest.raises(rd.SourceDamagedError) as raised:
        for batch in rd.read_local(path, batch_size):
            ids += [r.get("id") for r in batch.rows]
    return ids, raised.value


@pytest.mark.parametrize("keep", [0.31, 0.5, 0.77, 0.999])
def test_a_cut_gzip_yields_every_complete_line_then_says_where_it_ends(tmp_path, keep):
    whole = _gzipped_rows(tmp_path / "whole.jsonl.gz", 400)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: int(len(whole) * keep)])
    complete = zlib.decompressobj(31).decompress(cut.read_bytes()).count(b"\n")  # lines whole in what is left
    assert 0 < complete <= 400  # a cut in the trailer loses no line, and is still a cut
    ids, err = _read_until_damage(cut)
    assert ids == [str(i) for i in range(complete)]
    assert f"cut.jsonl.gz: unreadable after line {complete:,}: " in str(err)
    assert f"cut short (compressed byte {cut.stat().st_size:,} of {cut.stat().st_size:,})" in str(err)


@pytest.mark.parametrize("rows", [3, 300])  # a small file is damaged within the first bytes its encoding is checked on
def test_garbage_after_a_complete_gzip_costs_no_row(tmp_path, rows):
    path = tmp_path / "in.jsonl.gz"
    data = _gzipped_rows(path, rows)
    garbage = b"\x96\xc5 not gzip at all" * 50
    path.write_bytes(data + garbage)
    ids, err = _read_until_damage(path)
    assert ids == [str(i) for i in range(rows)]
    assert (f"unreadable after line {rows:,}: {len(garbage):,} bytes that are not gzip follow the compressed data "
            f"(compressed byte {len(data):,} of {len(data + garbage):,}); every complete line before it was read"
            ) in str(err)


def test_a_gzip_cut_inside_its_header_is_an_error_not_an_empty_file(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(_gzipped_rows(path, 10)[:5])
    ids, err = _read_until_damage(path)
    assert ids == [] and "unreadable from the start" in str(err)


def test_corrupt_compressed_data_is_a_damaged_file_not_a_zlib_traceback(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    data = bytearray(_gzipped_rows(path, 300))
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # zeroed bytes mid-stream
    path.write_bytes(bytes(data))
    ids, err = _read_until_damage(path)
    assert len(ids) < 300
    assert "may have altered some of them" in str(err)
    assert isinstance(err, rd.SourceReadError) and isinstance(err.__cause__, (OSError, EOFError, zlib.error))


def test_zero_padding_and_several_members_are_a_whole_gzip(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    first = gzip.compress(b'{"id": "0"}\n')
    path.write_bytes(first + bytes(10) + gzip.compress(b'{"id": "1"}\n') + bytes(3))
    assert [r["id"] for b in rd.read_local(path, 5) for r in b.rows] == ["0", "1"]
    assert rd.gzip_damage(path) is None
    path.write_bytes(first + bytes(10) + b"PK\x03\x04")
    damage = rd.gzip_damage(path)
    assert damage == rd.GzipDamage(len(first) + 10, "4 bytes that are not gzip follow the compressed data")


def _parquet_with_groups(path, rows, group_rows, **write):
    # Plain pages without statistics: the middle of a column chunk is then page data, not a header's min/max.
    pq.write_table(pa.Table.from_pylist([{**r, "text": f"row {r['id']} " + "words to compress " * 30} for r in rows]),
                   path, row_group_size=group_rows, use_dictionary=False, write_statistics=False, **write)


def _damage_group(path, group, column="text", flip=0xFF, span=64):
    """Flip `span` bytes in the middle of one row group's column chunk."""
    meta = pq.ParquetFile(path).metadata
    names = [meta.row_group(group).column(j).path_in_schema for j in range(meta.num_columns)]
    chunk = meta.row_group(group).column(names.index(column))
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    data = bytearray(path.read_bytes())
    middle = start + chunk.total_compressed_size // 2
    for k in range(middle, middle + span):
        data[k] ^= flip
    path.write_bytes(bytes(data))


def test_a_corrupt_parquet_page_costs_its_row_group_only(tmp_path):
    path = tmp_path / "in.parquet"
    _parquet_with_groups(path, _rows(60), 10)
    _damage_group(path, 2)
    batches = []
    with pytest.raises(rd.SourceDamagedError) as raised:
        for batch in rd.read_local(path, 8):
            batches.append(batch)
    kept = [i for i in range(60) if not 20 <= i < 30]
    assert [r["id"] for b in batches for r in b.rows] == [str(i) for i in kept]
    assert [p for b in batches for p in b.positions] == [f"in.parquet[train][{i}]" for i in kept]
    assert [len(b) for b in batches] == [8, 8, 8, 8, 8, 8, 2]  # batches span groups, the damaged one included
    assert str(raised.value).startswith(f"{path}: row group 2 is damaged, rows 20-29 (10) were not read (")
    assert str(raised.value).endswith("; the other 50 of 60 rows were read (row groups 0-5)")


def test_a_parquet_page_checksum_that_fails_costs_its_row_group(tmp_path):
    """A flipped bit in an uncompressed page decodes to other text: only the page's checksum sees it."""
    path = tmp_path / "in.parquet"
    _parquet_with_groups(path, _rows(30), 10, compression="none", write_page_checksum=True)
    _damage_group(path, 1, flip=0x01, span=1)
    ids, err = _read_until_damage(path)
    assert ids == [str(i) for i in range(30) if not 10 <= i < 20]
    assert "row group 1 is damaged, rows 10-19 (10)" in str(err) and "checksum" in str(err).lower()


def test_a_damaged_file_read_with_a_limit_before_the_damage_is_no_error(tmp_path):
    path = tmp_path / "in.parquet"
    _parquet_with_groups(path, _rows(40), 10)
    _damage_group(path, 3)
    assert sum(len(b) for b in rd.limit_rows(rd.read_local(path, 10), 25)) == 25


def _folder(tmp_path, data_files: str, rows=5):
    """A folder whose card's `dpo` config names `data_files`, with a file inside it and one outside it."""
    folder, outside = tmp_path / "f", tmp_path / "outside"
    (folder / "data").mkdir(parents=True)
    outside.mkdir()
    for f in (folder / "data" / "train.jsonl", outside / "secret.jsonl"):
        f.write_text("".join(json.dumps(r) + "\n" for r in _rows(rows)))
    (folder / "README.md").write_text(f"---\nconfigs:\n- config_name: dpo\n  data_files: {data_files}\n---\n")
    return folder, outside


@pytest.mark.parametrize("data_files", [
    "../outside/secret.jsonl", "'{outside}/secret.jsonl'", "../**/*.jsonl", "data/../../outside/secret.jsonl",
    "hf://datasets/org/other/secret.jsonl", "'file:///{outside}/secret.jsonl'", "~/secret.jsonl",
    "[{{split: train, path: ../outside/secret.jsonl}}]",
])
def test_a_folder_s_card_naming_a_file_outside_it_is_refused_naming_config_and_path(tmp_path, data_files):
    folder, outside = _folder(tmp_path, data_files.format(outside=tmp_path / "outside"))
    for call in (lambda: list(rd.read_folder(folder, "dpo", (), 10)), lambda: rd.folder_revision(folder, "dpo")):
        with pytest.raises(rd.SourceReadError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"{folder}: config 'dpo' names '") and "outside the folder" in message, message


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_link_inside_the_folder_to_a_file_outside_it_is_refused(tmp_path, link):
    folder, outside = _folder(tmp_path, "data/**/*.jsonl" if link == "file" else "data/more/*.jsonl")
    if link == "file":
        (folder / "data" / "more.jsonl").symlink_to(outside / "secret.jsonl")
    else:
        (folder / "data" / "more").symlink_to(outside)
    with pytest.raises(rd.SourceReadError, match=f"config 'dpo' names 'data/.*links to {outside}/secret.jsonl, "
                                                 "outside the folder"):
        list(rd.read_folder(folder, "dpo", (), 10))


def test_a_folder_reads_and_hashes_exactly_the_files_its_card_names(tmp_path):
    folder, _ = _folder(tmp_path, "[{split: train, path: data/train*.jsonl}, {split: test, path: data/t.jsonl}]")
    (folder / "data" / "t.jsonl").write_text(json.dumps({"id": "t", "x": 0}) + "\n")
    inner = folder / "data" / "inner"
    inner.mkdir()
    (inner / "link.jsonl").symlink_to(folder / "data" / "t.jsonl")  # a link that stays inside is read as any file
    (folder / "README.md").write_text((folder / "README.md").read_text().replace("data/t.jsonl",
                                                                                   "data/**/*.jsonl"))
    assert {s: [f.relative_to(folder).as_posix() for f in fs] for s, fs in rd.folder_files(folder, None, ()).items()} \
        == {"train": ["data/train.jsonl"], "test": ["data/inner/link.jsonl", "data/t.jsonl", "data/train.jsonl"]}
    before = rd.folder_revision(folder, "dpo", ("train",))
    (folder / "notes.jsonl").write_text("not read\n")  # a file the card does not name: the same revision
    assert rd.folder_revision(folder, "dpo", ("train",)) == before
    (folder / "data" / "t.jsonl").write_text("{}\n")  # a file of another split: the same revision of train
    assert rd.folder_revision(folder, "dpo", ("train",)) == before != rd.folder_revision(folder, "dpo", ())
    with (folder / "data" / "train.jsonl").open("a") as f:  # rows appended to a file it reads: a new one
        f.write(json.dumps({"id": "new", "x": 1}) + "\n")
    assert rd.folder_revision(folder, "dpo", ("train",)) != before
    assert [len(b.rows) for b in rd.read_folder(folder, "dpo", ("train",), 100)] == [6]


def test_a_folder_without_configs_or_a_split_it_lacks_is_refused(tmp_path):
    folder, _ = _folder(tmp_path, "data/train.jsonl")
    with pytest.raises(rd.SourceReadError, match="config 'dpo' has no split 'test': its splits are train"):
        rd.folder_files(folder, "dpo", ("test",))
    with pytest.raises(rd.SourceReadError, match="config 'dpo' names 'data/none.jsonl', which matches no file"):
        (folder / "README.md").write_text("---\nconfigs:\n- config_name: dpo\n  data_files: data/none.jsonl\n---\n")
        rd.folder_files(folder, "dpo", ())
    (folder / "README.md").write_text("no card\n")
    with pytest.raises(rd.SourceReadError, match="no README.md card whose configs name its data files"):
        rd.folder_files(folder, None, ())


def _with_a_big_row(rows: list[dict], at: int, size: int) -> list[dict]:
    return [*rows[:at], {"id": "big", "x": "y" * size}, *rows[at:]]


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "json", "parquet", "folder"])
def test_a_row_over_the_limit_is_unreadable_with_its_size_and_the_others_are_read(tmp_path, kind):
    rows = _with_a_big_row([{"id": str(i), "x": str(i)} for i in range(9)], 4, 5000)
    path = tmp_path / f"in.{kind if kind != 'folder' else 'parquet'}"
    if kind in ("parquet", "folder"):
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=4)
    elif kind == "json":
        path.write_text(json.dumps(rows))
    else:
        with (gzip.open(path, "wt") if kind.endswith(".gz") else path.open("w")) as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
    if kind == "folder":
        (tmp_path / "README.md").write_text("---\nconfigs:\n- config_name: c\n  data_files: in.parquet\n---\n")
        path = tmp_path
    batches = list(rd.read_path(path, None, (), 3, max_row_bytes=2000))
    assert [r["id"] for b in batches for r in b.rows] == [str(i) for i in range(9)]
    (bad,) = [u for b in batches for u in b.unreadable]
    assert bad.reason == "row_too_large(<=2,000 bytes)" and bad.error.endswith(" bytes") and "big" in bad.text
    assert int(bad.error.split()[0].replace(",", "")) > 5000 and len(bad.text) < 5000
    assert bad.position in ("in.jsonl:5", "in.jsonl.gz:5", "in.json[4]", "in.parquet[train][4]",
                            f"{tmp_path}[train][4]")
    assert sum(len(b) for b in batches) == 10


def test_a_30_mb_line_with_the_default_limit_is_quarantined_without_holding_it(tmp_path):
    import tracemalloc

    from common.settings import Settings

    path = tmp_path / "big.jsonl"
    big = '{"id": "big", "prompt": "' + "y" * (30 << 20) + '"}'
    with path.open("w") as f:
        f.write(json.dumps({"id": "0", "x": 0}) + "\n")
        f.write(big + "\r\n")
        f.write(json.dumps({"id": "2", "x": 2}) + "\n")
    tracemalloc.start()
    batches = list(rd.read_local(path, 10, Settings().row_byte_limit))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [r["id"] for b in batches for r in b.rows] == ["0", "2"]
    (bad,) = batches[0].unreadable
    assert (bad.position, bad.error) == ("big.jsonl:2", f"{len(big):,} bytes")
    assert peak < 3 * Settings().row_byte_limit  # the line is 30 MiB: never read whole
