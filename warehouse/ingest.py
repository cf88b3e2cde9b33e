"""Ingest: look-ups for a batch, writing a batch in one transaction, the near-duplicate index,
evaluation prompts and contamination, and source pins."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import duckdb
import numpy as np
import pyarrow as pa

from common.arrays import sorted_unique
from warehouse.connection import Part, _now

# DuckDB's rows per row group (its default `row_group_size`): the unit a checkpoint compresses and writes.
ROW_GROUP_ROWS = 122_880
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def _bytes(size: str) -> int:
    """Bytes of a DuckDB size setting as it shows it ("953.6 MiB", "1.0 GiB", "0 bytes")."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([kmgt]i?)?b(ytes?)?\s*", size.lower())
    if not m:
        raise ValueError(f"not a size: {size!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2) or ""])


class IngestStore(Part):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    # Inside `checkpoints_per_row_group`: candidate pairs committed since the last checkpoint, counted from the
    # start of the table's last row group, and their Arrow bytes; None outside it (DuckDB checkpoints by WAL
    # size, as configured).
    _pairs_since_checkpoint: int | None = None
    _pair_bytes_since_checkpoint = 0
    _pair_bytes_budget = 0

    @contextmanager
    def checkpoints_per_row_group(self) -> Iterator[None]:
        """Checkpoint when a row group of candidate pairs is full (or their uncheckpointed bytes reach DuckDB's
        memory limit), and once at the end, instead of whenever the WAL passes DuckDB's 16 MB: a checkpoint
        compresses the table's last row group again as a whole, so a checkpoint every batch or two compressed
        each 6 KB pair about five times over (measured: the warehouse writes were three quarters of a 100k-pair
        ingest). The byte budget keeps wide pairs from being spilled past the memory limit before their row group
        fills. It is the whole limit, not a part: each checkpoint inside one row group compresses every pair
        since the last full one again (100k pairs of 7.6 KB at 1 GB: a third of the limit made two checkpoints
        before the last, 17.6 s of the writer's time; the whole limit none, the flow 43.7 -> 39.7 s, peak RSS
        1.47 -> 1.37 GiB). The checkpoints run on the writer
        thread (`write_ingest_batch`), beside the next batch's preparation. The texts keep DuckDB's own choice of
        compression (dictionary/FSST): forced zstd wrote a little faster but cost every later reader of the texts
        about 30% more CPU (measured on a 200k-pair warehouse, single-threaded, means of 4 runs: a version's pool read,
        row digests and row copy 5.2 -> 6.8 CPU-s), and a version is built far more often than its pairs are ingested."""
        (rows,) = self.con.execute("SELECT count(*) FROM candidate_pairs").fetchone()
        (limit,) = self.con.execute("SELECT current_setting('memory_limit')").fetchone()
        self.con.execute("SET checkpoint_threshold = '1TB'")
        self._pairs_since_checkpoint = rows % ROW_GROUP_ROWS
        try:
            budget = _bytes(limit)
        except ValueError:  # a limit shown some other way: full row groups alone decide
            budget = 2**62
        self._pair_bytes_since_checkpoint, self._pair_bytes_budget = 0, budget
        try:
            yield
            self.con.execute("CHECKPOINT")
        finally:
            self._pairs_since_checkpoint = None
            self.con.execute("RESET checkpoint_threshold")

    def _checkpoint_if_due(self, pairs: pa.Table | None) -> None:
        """Inside `checkpoints_per_row_group`, after a batch's commit: checkpoint if a row group filled up or the
        pairs not yet checkpointed reached the byte budget."""
        if self._pairs_since_checkpoint is None or pairs is None:
            return
        self._pairs_since_checkpoint += pairs.num_rows
        self._pair_bytes_since_checkpoint += pairs.nbytes
        if self._pairs_since_checkpoint >= ROW_GROUP_ROWS or self._pair_bytes_since_checkpoint >= self._pair_bytes_budget:
            self.con.execute("CHECKPOINT")
            self._pairs_since_checkpoint %= ROW_GROUP_ROWS
            self._pair_bytes_since_checkpoint = 0

    def known_pair_ids(self, pair_ids: list[str], responses_a: list[str]) -> dict[str, bool]:
        """{pair id: whether its stored response A is the given one} for the ids already in the warehouse (a
        sighting of a known pair with the answers the other way round is `swapped`)."""
        if not pair_ids:
            return {}
        # Which ids are known first, reading only the id column; the stored answers only of those: joined at
        # once, the answers of every stored pair were read and cached (220 MB at a million pairs).
        known = {pid for (pid,) in self._matching(
            "SELECT pair_id FROM candidate_pairs JOIN lookup_keys USING (pair_id)",
            pa.table({"pair_id": pa.array(pair_ids, pa.string())}))}
        if not known:
            return {}
        pairs = [(pid, a) for pid, a in zip(pair_ids, responses_a) if pid in known]
        rows = self._matching(
            "SELECT p.pair_id, p.response_a = k.response_a FROM candidate_pairs p JOIN lookup_keys k USING (pair_id)",
            pa.table({"pair_id": pa.array([p for p, _ in pairs], pa.string()),
                      "response_a": pa.array([a for _, a in pairs], pa.string())}),
        )
        return dict(rows)

    def known_sightings(self, source: str, keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """{(source_id, pair_id): ingest run id} for the keys of this source already recorded."""
        if not keys:
            return {}
        rows = self._matching(
            "SELECT s.source_id, s.pair_id, s.ingest_run_id FROM pair_sightings s "
            "JOIN lookup_keys k USING (source_id, pair_id) WHERE s.source = ?",
            pa.table({"source_id": [k[0] for k in keys], "pair_id": [k[1] for k in keys]}), [source],
        )
        return {(a, b): run for a, b, run in rows}

    def known_quarantine(self, source: str, keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """(row_hash, position) keys of this source already quarantined."""
        if not keys:
            return set()
        rows = self._matching(
            "SELECT q.row_hash, q.position FROM quarantine q JOIN lookup_keys k USING (row_hash, position) "
            "WHERE q.source = ?",
            pa.table({"row_hash": [k[0] for k in keys], "position": [k[1] for k in keys]}), [source],
        )
        return {(a, b) for a, b in rows}

    def write_ingest_batch(
        self,
        *,
        pairs: pa.Table | None,
        sightings: pa.Table | None,
        quarantine: pa.Table | None,
        near_duplicates: pa.Table | None,
        signatures: pa.Table | None,
        contamination: pa.Table | None,
        band_keys: np.ndarray | None = None,
        pii_scans: pa.Table | None = None,
        pii_findings: pa.Table | None = None,
    ) -> None:
        """Insert everything one batch produced, all or nothing. Keys already present are left alone.
        `band_keys`: the stored band keys of `signatures`' rows (docs x bands), indexed with them; `pii_scans` and
        `pii_findings`: the personal-data scan of the new pairs (migration 026)."""
        statements = [
            ("candidate_pairs", pairs),
            ("pair_sightings", sightings),
            ("quarantine", quarantine),
            ("near_duplicates", near_duplicates),
            ("contamination", contamination),
            ("pii_scans", pii_scans),
        ]
        with self.transaction():
            for table, data in statements:
                if data is not None and data.num_rows:
                    self._insert(table, data, "ON CONFLICT DO NOTHING")
            if pii_findings is not None and pii_findings.num_rows:  # of new pairs only: none is there yet
                self._insert("pii_findings", pii_findings)
            if signatures is not None and signatures.num_rows:
                self._index_signatures(signatures, band_keys)
        self._checkpoint_if_due(pairs)

    def _index_signatures(self, signatures: pa.Table, band_keys: np.ndarray | None) -> None:
        """Store kept pairs' signatures under the next doc numbers, with their band keys (inside a transaction)."""
        start = self.index_start()
        docs = np.arange(start, start + signatures.num_rows, dtype=np.int64)
        self._insert("pair_signatures", signatures.append_column("doc", pa.array(docs)), "ON CONFLICT DO NOTHING")
        if band_keys is not None and len(band_keys):
            self._insert("pair_band_keys", pa.table({
                "key": pa.array(band_keys.ravel(), pa.uint64()),
                "doc": pa.array(np.repeat(docs, band_keys.shape[1]))}))

    def index_start(self) -> int:
        """The doc number the next kept pair gets: pairs below it were stored before this point."""
        return self.con.execute("SELECT coalesce(max(doc), 0) + 1 FROM pair_signatures").fetchall()[0][0]

    def index_unkeyed_signatures(self, num_perm: int, keys_of, chunk: int = 50_000) -> int:
        """Give band keys to signatures stored before the warehouse indexed them (migration 012); returns
        how many. `keys_of(signatures) -> (docs x bands)` computes them."""
        done = 0
        while True:
            tbl = self.con.sql("SELECT pair_id, signature FROM pair_signatures WHERE doc IS NULL AND num_perm = ? "
                               "ORDER BY pair_id LIMIT ?", params=[num_perm, chunk]).to_arrow_table()
            if not tbl.num_rows:
                return done
            sigs = np.frombuffer(b"".join(tbl.column("signature").to_pylist()), dtype="<u4").reshape(
                tbl.num_rows, num_perm)
            keys = keys_of(sigs)
            with self.transaction():
                start = self.index_start()
                docs = np.arange(start, start + tbl.num_rows, dtype=np.int64)
                with self._registered("new_docs", pa.table({"pair_id": tbl.column("pair_id"), "doc": docs})):
                    self.con.execute("UPDATE pair_signatures SET doc = n.doc FROM new_docs n "
                                     "WHERE pair_signatures.pair_id = n.pair_id")
                self._insert("pair_band_keys", pa.table({"key": pa.array(keys.ravel(), pa.uint64()),
                                                         "doc": pa.array(np.repeat(docs, keys.shape[1]))}))
            done += tbl.num_rows

    def near_dup_candidates(self, num_perm: int, keys: np.ndarray, before_doc: int) -> tuple[list[str], np.ndarray]:
        """Signatures of pairs stored before `before_doc` that share a band key with `keys` (flat, stored form)."""
        if not len(keys):
            return [], np.empty((0, num_perm), np.uint32)
        # The docs first, then their signatures: in one query DuckDB read every stored signature (a GB at a million
        # pairs, all of it cached) to find the few it was asked for.
        with self._registered("lookup_keys", pa.table({"key": pa.array(sorted_unique(keys), pa.uint64())})):
            docs = self._streamed("SELECT DISTINCT k.doc FROM pair_band_keys k JOIN lookup_keys q ON k.key = q.key "
                                  "WHERE k.doc < ?", [before_doc])
        if not docs.num_rows:
            return [], np.empty((0, num_perm), np.uint32)
        with self._registered("lookup_docs", docs):
            tbl = self._streamed("SELECT s.pair_id, s.signature FROM pair_signatures s JOIN lookup_docs d "
                                 "ON s.doc = d.doc WHERE s.num_perm = ? ORDER BY s.doc", [num_perm])
        ids = tbl.column("pair_id").to_pylist()
        if not ids:
            return [], np.empty((0, num_perm), np.uint32)
        blob = b"".join(tbl.column("signature").to_pylist())
        return ids, np.frombuffer(blob, dtype="<u4").reshape(len(ids), num_perm).copy()

    def _streamed(self, sql: str, params: list) -> pa.Table:
        """A query's result, run under a lower memory limit (`_streaming_limit`): DuckDB keeps the blocks it reads
        cached up to its limit, and the near-duplicate look-up reads every band key and, spread over ~90k
        candidate docs a batch at a million pairs, nearly every signature block (~1 GB), once per batch. Under the
        lower limit it drops them as it goes; a query that needs more memory than that runs again under the full
        limit, which is restored after."""
        lower = self._streaming_limit()
        if lower is None:
            return self.con.sql(sql, params=params).to_arrow_table()
        try:
            self.con.execute(f"SET memory_limit = '{lower}B'")
            return self.con.sql(sql, params=params).to_arrow_table()
        except duckdb.OutOfMemoryException:  # more is pinned than that (indexes, pairs not yet checkpointed)
            self.con.execute(f"SET memory_limit = '{self.memory_limit}'")
            return self.con.sql(sql, params=params).to_arrow_table()
        finally:
            self.con.execute(f"SET memory_limit = '{self.memory_limit}'")

    def _streaming_limit(self) -> int | None:
        """What DuckDB cannot drop now (indexes, hash tables) plus a quarter of its limit, in bytes; None when
        that is no lower than the limit (or the limit is shown some other way)."""
        (shown,) = self.con.execute("SELECT current_setting('memory_limit')").fetchone()
        (pinned,) = self.con.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
                                     "WHERE tag <> 'BASE_TABLE'").fetchone()
        try:
            limit = _bytes(shown)
        except ValueError:
            return None
        lower = pinned + limit // 4
        return lower if lower < limit else None

    def upsert_eval_prompts(self, benchmark: str, rows: list[tuple[str, str]], revision: str) -> int:
        """Store (benchmark_id, prompt) rows; return how many were new."""
        before = self.count_eval_prompts(benchmark)
        table = pa.table(
            {
                "benchmark": [benchmark] * len(rows),
                "benchmark_id": [r[0] for r in rows],
                "prompt": [r[1] for r in rows],
                "source_revision": [revision] * len(rows),
                "loaded_at": pa.array([_now()] * len(rows), pa.timestamp("us")),
            }
        )
        self.write_table("eval_prompts", table, on_conflict="update prompt, source_revision, loaded_at")
        return self.count_eval_prompts(benchmark) - before

    def write_table(self, table: str, data: pa.Table, on_conflict: str = "nothing") -> None:
        """Insert an Arrow table into one of this module's tables, in a transaction."""
        if table not in {"eval_prompts", "contamination"}:
            raise ValueError(f"write_table does not write {table}")
        if on_conflict == "nothing":
            tail = "ON CONFLICT DO NOTHING"
        else:
            fields = [f.strip() for f in on_conflict.removeprefix("update").split(",")]
            tail = "ON CONFLICT DO UPDATE SET " + ", ".join(f"{f} = excluded.{f}" for f in fields)
        with self.transaction():
            self._insert(table, data, tail)

    def count_eval_prompts(self, benchmark: str | None = None) -> int:
        if benchmark is None:
            return self.con.execute("SELECT count(*) FROM eval_prompts").fetchone()[0]
        return self.con.execute("SELECT count(*) FROM eval_prompts WHERE benchmark = ?", [benchmark]).fetchone()[0]

    def eval_prompts(self) -> list[tuple[str, str, str]]:
        return self.con.execute(
            "SELECT benchmark, benchmark_id, prompt FROM eval_prompts ORDER BY benchmark, benchmark_id"
        ).fetchall()

    def eval_prompt_counts(self) -> dict[str, int]:
        return dict(self.con.execute("SELECT benchmark, count(*) FROM eval_prompts GROUP BY benchmark ORDER BY 1").fetchall())

    def iter_pair_histories(self, batch_size: int = 10_000) -> Iterable[tuple[list[str], list[list[dict]]]]:
        """(pair ids, histories) of every candidate pair, in batches (for re-checking contamination)."""
        cur = self.con.cursor()  # its own cursor: the caller may write between batches
        cur.execute("SELECT pair_id, history FROM candidate_pairs ORDER BY pair_id")
        while rows := cur.fetchmany(batch_size):
            yield [r[0] for r in rows], [r[1] for r in rows]

    def count_contaminated(self) -> int:
        return self.con.execute("SELECT count(DISTINCT pair_id) FROM contamination").fetchone()[0]

    def source_pin(self, source: str) -> str | None:
        row = self.con.execute("SELECT revision FROM source_pins WHERE source = ?", [source]).fetchone()
        return row[0] if row else None

    def set_source_pin(self, source: str, hub_id: str, revision: str) -> None:
        self.con.execute(
            "INSERT INTO source_pins VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET hub_id = excluded.hub_id, "
            "revision = excluded.revision, pinned_at = excluded.pinned_at",
            [source, hub_id, revision, _now()],
        )
