"""What each source says about its labels and rows, stored beside its pairs (`source_facts`, migration 023): one
row per source, the facts as JSON, a digest of their meaning, and the first and last ingest runs that recorded
them. `tasks.ingest.source_facts` says what the facts are; this module only stores and reads them."""

from __future__ import annotations

from typing import Any

from warehouse.connection import Part, _now


class SourceFactsStore(Part):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    def _has_table(self) -> bool:
        """Whether the warehouse has `source_facts`: one older than migration 023, opened read-only, has none."""
        return bool(self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'source_facts'").fetchone()[0])

    def source_facts(self) -> dict[str, dict[str, Any]]:
        """{source: {facts (JSON text), meaning_digest, first_run_id, first_at, last_run_id, last_at}}; {} for a
        warehouse that stores none."""
        if not self._has_table():
            return {}
        cur = self.con.execute("SELECT source, facts, meaning_digest, first_run_id, first_at, last_run_id, last_at "
                               "FROM source_facts ORDER BY source")
        names = [d[0] for d in cur.description]
        return {row[0]: dict(zip(names[1:], row[1:])) for row in cur.fetchall()}

    def pair_sources(self) -> list[str]:
        """Every source some pair of the warehouse came from."""
        return [s for (s,) in self.con.execute("SELECT DISTINCT source FROM candidate_pairs ORDER BY source").fetchall()]

    def has_pairs(self, source: str) -> bool:
        return self.con.execute("SELECT EXISTS (SELECT 1 FROM candidate_pairs WHERE source = ?)",
                                [source]).fetchone()[0]

    def record_source_facts(self, source: str, facts: str, meaning_digest: str, run_id: str) -> None:
        """The facts an ingest run of `source` read it with: the first run's stay on record, the rest is this run's.
        Recording the same run again changes nothing but the time."""
        now = _now()
        self.con.execute(
            "INSERT INTO source_facts (source, facts, meaning_digest, first_run_id, first_at, last_run_id, last_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source) DO UPDATE SET facts = excluded.facts, "
            "meaning_digest = excluded.meaning_digest, last_run_id = excluded.last_run_id, last_at = excluded.last_at",
            [source, facts, meaning_digest, run_id, now, run_id, now])
