"""The near-duplicate index in the warehouse: band keys stored with each kept pair, candidates looked up by
key (only their signatures loaded), pairs kept before the index existed given keys on the next ingest."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from schemas.pair import SIGNATURE_SCHEMA
from tasks.ingest.dedup import NearDupIndex
from tasks.ingest.synth_rows import TextMaker
from warehouse.store import Warehouse


def _signatures(ids: list[str], sigs: np.ndarray, perms: int) -> pa.Table:
    return pa.table({"pair_id": ids, "num_perm": [perms] * len(ids),
                     "signature": [s.astype("<u4").tobytes() for s in sigs]}, schema=SIGNATURE_SCHEMA)


def _store(wh: Warehouse, index: NearDupIndex, ids: list[str], sigs: np.ndarray) -> None:
    wh.ingest.write_ingest_batch(pairs=None, sightings=None, quarantine=None, near_duplicates=None, contamination=None,
                          signatures=_signatures(ids, sigs, index.num_perm), band_keys=index.stored_keys(sigs))


def test_a_later_run_finds_near_duplicates_of_stored_pairs_loading_only_candidates(warehouse_path):
    tm = TextMaker(5)
    originals = [tm.text(2000) for _ in range(600)]
    probe = NearDupIndex(128, 0.8)
    with Warehouse(warehouse_path) as wh:
        _store(wh, probe, [f"o{i}" for i in range(600)], probe.signatures_of(originals))
        before = wh.ingest.index_start()
        assert before == 601
        loaded: list[int] = []

        def lookup(keys):
            ids, sigs = wh.ingest.near_dup_candidates(128, keys, before)
            loaded.append(len(ids))
            return ids, sigs

        index = NearDupIndex(128, 0.8, lookup=lookup)
        edited = [tm.edit(originals[i], 0.01) for i in range(20)]
        fresh = [tm.text(2000) for _ in range(20)]
        v = index.assign([f"e{i}" for i in range(20)] + [f"f{i}" for i in range(20)],
                         index.signatures_of(edited + fresh))
        assert v.duplicate_of[:20] == [f"o{i}" for i in range(20)]
        assert v.duplicate_of[20:] == [None] * 20
        assert 20 <= loaded[0] < 60  # the candidates, not the 600 stored signatures
        assert len(index) == 20  # in memory: this run's kept pairs only

        # pairs stored from here on (this run's) are not looked up again: they are in memory already
        _store(wh, probe, [f"f{i}" for i in range(20)], probe.signatures_of(fresh))
        ids, _ = wh.ingest.near_dup_candidates(128, probe.stored_keys(probe.signatures_of(fresh[:1])).ravel(), before)
        assert ids == []
        ids, _ = wh.ingest.near_dup_candidates(128, probe.stored_keys(probe.signatures_of(fresh[:1])).ravel(),
                                        wh.ingest.index_start())
        assert ids == ["f0"]


def test_signatures_stored_before_the_index_get_their_keys(warehouse_path):
    tm = TextMaker(6)
    texts = [tm.text(2000) for _ in range(50)]
    probe = NearDupIndex(128, 0.8)
    sigs = probe.signatures_of(texts)
    with Warehouse(warehouse_path) as wh:
        # as an older warehouse holds them: signatures without doc numbers or band keys
        wh.query("INSERT INTO pair_signatures (pair_id, num_perm, signature) SELECT * FROM "
                 "(VALUES " + ", ".join(f"('p{i}', 128, from_hex('{s.astype('<u4').tobytes().hex()}'))"
                                        for i, s in enumerate(sigs)) + ")")
        assert wh.ingest.near_dup_candidates(128, probe.stored_keys(sigs[:1]).ravel(), 10**9)[0] == []
        assert wh.ingest.index_unkeyed_signatures(128, probe.stored_keys, chunk=20) == 50
        assert wh.ingest.index_unkeyed_signatures(128, probe.stored_keys) == 0
        ids, found = wh.ingest.near_dup_candidates(128, probe.stored_keys(sigs[7:8]).ravel(), wh.ingest.index_start())
        assert "p7" in ids and np.array_equal(found[ids.index("p7")], sigs[7])


def test_the_look_up_runs_under_a_lower_memory_limit_and_restores_it(warehouse_path):
    tm = TextMaker(8)
    texts = [tm.text(1000) for _ in range(30)]
    probe = NearDupIndex(128, 0.8)
    sigs = probe.signatures_of(texts)
    with Warehouse(warehouse_path) as wh:
        _store(wh, probe, [f"p{i}" for i in range(30)], sigs)
        configured = wh.query("SELECT current_setting('memory_limit')")[0][0]
        ids, found = wh.ingest.near_dup_candidates(128, probe.stored_keys(sigs[3:4]).ravel(), wh.ingest.index_start())
        assert "p3" in ids and np.array_equal(found[ids.index("p3")], sigs[3])
        assert wh.query("SELECT current_setting('memory_limit')")[0][0] == configured
        during = wh.ingest._streamed("SELECT current_setting('memory_limit') AS m", []).column("m")[0].as_py()
        assert during != configured  # the query ran under the lower limit
        assert wh.query("SELECT current_setting('memory_limit')")[0][0] == configured


def test_a_look_up_that_needs_more_memory_runs_again_under_the_full_limit(warehouse_path, monkeypatch):
    with Warehouse(warehouse_path) as wh:
        wh.query("CREATE TABLE big AS SELECT range AS i, repeat('x', 100) AS t FROM range(300000)")
        configured = wh.query("SELECT current_setting('memory_limit')")[0][0]
        monkeypatch.setattr(wh.ingest, "_streaming_limit", lambda: 1)  # a byte: DuckDB refuses it
        sql = "SELECT i % 7 AS k, count(DISTINCT t || i) AS n FROM big GROUP BY 1 ORDER BY 1"
        assert wh.ingest._streamed(sql, []).column("n").to_pylist() == [n for _, n in wh.query(sql)]
        assert wh.query("SELECT current_setting('memory_limit')")[0][0] == configured
