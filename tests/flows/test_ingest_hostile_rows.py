"""One row never stops an ingest: every hostile class, amid good rows and filling the last batch, is
quarantined with its reason while every good row lands, and the counts add up."""

from __future__ import annotations

import json
import random

import pytest

from flows.ingest import ingest
from tasks.ingest.read import SourceReadError
from tasks.ingest.synth import synth_class, synth_lines
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect

BATCH = 500


def _hostile_file(path, kind: str, good: int, seed: int) -> dict[int, str]:
    """`good` good rows with one row of every bad class in the middle, then a last batch of bad rows
    only; returns {0-based line: expected reason prefix}."""
    lines = list(synth_lines(kind, good, seed, pair_bytes=500, exact_dup_rate=0, near_dup_rate=0, bad_rate=0))
    gen = synth_class(kind)(seed + 1, 500, [])
    rng = random.Random(seed)
    expected: dict[int, str] = {}
    for bad_kind, reason in gen.BAD_KINDS.items():  # amid good rows
        at = rng.randrange(1, len(lines) - 1)
        row = gen.bad(bad_kind)
        lines.insert(at, row if isinstance(row, str) else json.dumps(row))
        expected = {(k + 1 if k >= at else k): r for k, r in expected.items()}
        expected[at] = reason
    tail = []  # the last batch: bad rows only, every class again
    while len(tail) < BATCH // 2:
        for bad_kind, reason in gen.BAD_KINDS.items():
            row = gen.bad(bad_kind)
            expected[len(lines) + len(tail)] = reason
            tail.append(row if isinstance(row, str) else json.dumps(row))
    # a row holding a NUL and zero-width characters inside real text is good, and must store
    good_row = json.loads(lines[0])
    key = "response1" if kind == "helpsteer3" else "model_a"
    good_row[key] = "fine\x00 text\u200b with invisible characters"
    lines[0] = json.dumps(good_row)
    path.write_text("\n".join(lines + tail) + "\n", encoding="utf-8")
    return expected


@pytest.mark.parametrize("kind", ["helpsteer3", "arena"])
def test_every_hostile_row_is_quarantined_and_every_good_row_lands(tmp_path, warehouse_path, kind):
    path = tmp_path / f"{kind}.jsonl"
    expected = _hostile_file(path, kind, 2000, seed=31)
    s = ingest(kind, path=str(path), warehouse=str(warehouse_path), batch_size=BATCH)

    total = 2000 + len(expected)
    assert s["read"] == total == s["valid"] + s["quarantined_rows"]
    assert s["quarantined_rows"] == len(expected)
    assert s["valid"] == 2000 == s["already_ingested"] + s["exact_duplicates"] + s["near_duplicates"] + s["new_pairs"]
    with Warehouse(warehouse_path, read_only=True) as wh:
        rows = wh.query("SELECT position, reasons FROM quarantine")
        assert wh.runs.ingest_runs(1)[0]["status"] == "completed"
        stored = wh.query("SELECT count(*) FROM candidate_pairs")[0][0]
    assert stored == s["new_pairs"] + s["near_duplicates"]
    got = {int(pos.rsplit(":", 1)[1]) - 1: reasons for pos, reasons in rows}
    wrong = {line: (reason, got.get(line)) for line, reason in expected.items()
             if not any(r.startswith(reason) for r in got.get(line) or [])}
    assert not wrong
    assert set(got) == set(expected)

    again = ingest(kind, path=str(path), warehouse=str(warehouse_path), batch_size=BATCH, force=True)
    assert again["new_pairs"] == again["new_quarantined"] == 0 and again["read"] == total


def test_a_last_batch_lacking_a_column_is_quarantined_row_by_row(tmp_path, warehouse_path):
    path = tmp_path / "hs.jsonl"
    lines = list(synth_lines("helpsteer3", 1200, 3, pair_bytes=400, exact_dup_rate=0, near_dup_rate=0, bad_rate=0))
    for i in range(1000, 1200):  # the whole last batch lacks response2
        row = json.loads(lines[i])
        del row["response2"]
        lines[i] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    s = ingest("helpsteer3", path=str(path), warehouse=str(warehouse_path), batch_size=BATCH)
    assert s["read"] == 1200 and s["valid"] == 1000
    assert s["quarantined"] == {"response2:missing": 200}


def test_a_json_array_file_is_read_element_by_element(tmp_path, warehouse_path):
    path = tmp_path / "hs.json"
    rows = [json.loads(line) for line in synth_lines("helpsteer3", 300, 5, pair_bytes=400, exact_dup_rate=0,
                                                       near_dup_rate=0, bad_rate=0)]
    path.write_text(json.dumps(rows[:150] + ["not a row"] + rows[150:]))
    s = ingest("helpsteer3", path=str(path), warehouse=str(warehouse_path), batch_size=100)
    assert s["read"] == 301 and s["valid"] == 300 and s["quarantined"] == {"not_an_object": 1}
    with Warehouse(warehouse_path, read_only=True) as wh:
        assert wh.query("SELECT position FROM quarantine") == [("hs.json[150]",)]


def test_a_utf16_file_is_refused_naming_the_encoding_and_writes_nothing(tmp_path, warehouse_path):
    path = tmp_path / "hs.jsonl"
    text = "\n".join(synth_lines("helpsteer3", 20, 5, pair_bytes=300, bad_rate=0)) + "\n"
    path.write_bytes(text.encode("utf-16"))
    with pytest.raises(SourceReadError, match="UTF-16"):
        ingest("helpsteer3", path=str(path), warehouse=str(warehouse_path))
    with Warehouse(warehouse_path, read_only=True) as wh:
        assert wh.counts()["quarantine"] == 0 and wh.counts()["candidate_pairs"] == 0


def test_a_utf8_byte_order_mark_does_not_cost_the_first_row(tmp_path, warehouse_path):
    path = tmp_path / "hs.jsonl"
    text = "\n".join(synth_lines("helpsteer3", 20, 6, pair_bytes=300, exact_dup_rate=0, near_dup_rate=0, bad_rate=0))
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    s = ingest("helpsteer3", path=str(path), warehouse=str(warehouse_path))
    assert s["read"] == 20 and s["valid"] == 20


def test_a_row_over_the_size_limit_is_quarantined_by_name_and_the_batch_lands(tmp_path, warehouse_path, monkeypatch):
    """CURATE_MAX_ROW_BYTES (a small one here; by default far more than the judge could read): the row is
    quarantined while it is read, with its size, and every other row of its batch lands."""
    from common.settings import get_settings

    monkeypatch.setenv("CURATE_MAX_ROW_BYTES", "20000")
    get_settings.cache_clear()
    lines = list(synth_lines("helpsteer3", 60, 5, pair_bytes=500, exact_dup_rate=0, near_dup_rate=0, bad_rate=0))
    big = json.loads(lines[0])
    big["response1"] = "long answer " * 5000
    lines.insert(30, json.dumps(big))
    path = tmp_path / "hs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        s = ingest("helpsteer3", path=str(path), warehouse=str(warehouse_path), batch_size=BATCH)
    finally:
        get_settings.cache_clear()
    assert s["quarantined"] == {"row_too_large(<=20,000 bytes)": 1} and s["valid"] == 60 and s["read"] == 61
    with Warehouse(warehouse_path, read_only=True) as wh:
        (position, stage, detail), = wh.query("SELECT position, stage, detail FROM quarantine")
    assert (position, stage, detail) == ("hs.jsonl:31", "read", f"{len(lines[30]):,} bytes")
