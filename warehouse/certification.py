"""What a certification remembers between runs (migration 024): the labels that trained a judge configuration's
rounds, the label roles its rounds decided by, and every certification attempt made on its labels. The rules that
read them are in `tasks.curate.label_roles`; this module only stores and reads."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from warehouse.connection import Part, _now


class CertificationStore(Part):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    def _has_tables(self) -> bool:
        """Whether the warehouse has migration 024's tables: one older, opened read-only, has none."""
        return bool(self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'certification_attempts'").fetchone()[0])

    def record_trained(self, config_id: str, pair_ids: list[str]) -> None:
        """Pairs whose label trained a round of `config_id` (once each; a pair recorded before keeps its time)."""
        if not pair_ids:
            return
        table = pa.table({"config_id": pa.array([config_id] * len(pair_ids), pa.string()),
                          "pair_id": pa.array(pair_ids, pa.string())})
        with self._registered("trained_now", table):
            self.con.execute("INSERT INTO trained_labels SELECT config_id, pair_id, ? FROM trained_now "
                             "ON CONFLICT DO NOTHING", [_now()])

    def trained(self, config_id: str) -> set[str]:
        if not self._has_tables():
            return set()
        return {p for (p,) in self.con.execute("SELECT pair_id FROM trained_labels WHERE config_id = ?",
                                               [config_id]).fetchall()}

    def record_label_roles(self, config_id: str, kind: str, share: float, min_audit_reviews: int) -> None:
        """The roles the first round of `config_id` decided by; later calls keep the first."""
        self.con.execute("INSERT INTO label_roles VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                         [config_id, kind, share, min_audit_reviews, _now()])

    def label_roles(self, config_id: str) -> dict[str, Any] | None:
        if not self._has_tables():
            return None
        row = self.con.execute("SELECT kind, calibration_share, min_audit_reviews, recorded_at FROM label_roles "
                               "WHERE config_id = ?", [config_id]).fetchone()
        return None if row is None else dict(zip(("kind", "calibration_share", "min_audit_reviews", "recorded_at"),
                                                 row))

    def attempts(self, config_id: str) -> list[dict[str, Any]]:
        """Every attempt on `config_id`'s labels, in the order made."""
        if not self._has_tables():
            return []
        cur = self.con.execute("SELECT * FROM certification_attempts WHERE config_id = ? ORDER BY attempt",
                               [config_id])
        names = [d[0] for d in cur.description]
        return [{**dict(zip(names, r)), "keys": json.loads(r[names.index("keys")])} for r in cur.fetchall()]

    def record_attempt(self, attempt: dict[str, Any]) -> None:
        """One attempt (the same attempt again changes nothing: its outcome is the same)."""
        cols = ("config_id", "attempt_key", "attempt", "labels_kind", "labels_digest", "target", "risk", "risk_spent",
                "keys", "certified")
        values = [json.dumps(attempt[c], sort_keys=True) if c == "keys" else attempt[c] for c in cols]
        self.con.execute(f"INSERT INTO certification_attempts ({', '.join(cols)}, created_at) VALUES "
                         f"({', '.join('?' for _ in cols)}, ?) ON CONFLICT DO NOTHING", [*values, _now()])
