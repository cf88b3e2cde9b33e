"""Dataset versions: what they are built from, their rows, and where they were published."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from warehouse.connection import Connection, _now


class VersionStore(Connection):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    def latest_judge_config_id(self) -> str | None:
        row = self.con.execute(
            "SELECT judge_config_id FROM judgments WHERE status = 'ok' GROUP BY judge_config_id "
            "ORDER BY max(finished_at) DESC LIMIT 1"
        ).fetchone()
        return row[0] if row else None

    def judged_pairs(self, config_id: str) -> list[dict[str, Any]]:
        """Every pair that is not a near duplicate, with its ok verdicts under `config_id` and whether it is
        contaminated (the policy decides what to do with that)."""
        cur = self.con.execute(
            """
            SELECT p.pair_id, p.source, p.source_id, p.source_revision, p.history, p.response_a, p.response_b,
                   p.human_label, p.both_bad, p.domain, p.language,
                   json_extract_string(p.metadata, '$.model_a') AS model_a,
                   json_extract_string(p.metadata, '$.model_b') AS model_b,
                   EXISTS (SELECT 1 FROM contamination c WHERE c.pair_id = p.pair_id) AS contaminated,
                   coalesce(list(struct_pack(o := j."order", s := j.sample_index, score_a := j.score_a,
                                             score_b := j.score_b, ranking_a := j.ranking_a, margin := j.margin_a)
                                 ORDER BY j."order", j.sample_index)
                            FILTER (WHERE j.pair_id IS NOT NULL), []) AS verdicts,
                   -- judged by an adaptive run (which asks the second order only when the first is borderline)
                   coalesce(bool_and(r.strategy LIKE 'adaptive%') FILTER (WHERE j.pair_id IS NOT NULL), false)
                       AS adaptive,
                   EXISTS (SELECT 1 FROM judgments f WHERE f.pair_id = p.pair_id AND f.judge_config_id = $1
                           AND f.status <> 'ok') AS has_failed
            FROM candidate_pairs p
            LEFT JOIN judgments j ON j.pair_id = p.pair_id AND j.judge_config_id = $1 AND j.status = 'ok'
            LEFT JOIN judge_runs r ON r.run_id = j.judge_run_id
            WHERE NOT EXISTS (SELECT 1 FROM near_duplicates n WHERE n.pair_id = p.pair_id)
            GROUP BY ALL
            ORDER BY p.pair_id
            """,
            [config_id],
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def version_inputs(self, config_id: str) -> str:
        """A fingerprint of everything a version is built from (pairs, near duplicates, contamination, the
        configuration's verdicts): equal fingerprints and policy mean equal content, without reading a row."""
        row = self.con.execute(
            """
            SELECT (SELECT count(*) FROM candidate_pairs) || '/' || (SELECT count(*) FROM near_duplicates) || '/' ||
                   (SELECT count(*) FROM contamination) || '/' ||
                   (SELECT count(*) || ':' || coalesce(max(finished_at)::VARCHAR, '') FROM judgments
                    WHERE judge_config_id = ? AND status = 'ok')
            """,
            [config_id],
        ).fetchone()
        return f"{config_id}/{row[0]}"

    def latest_version(self, name: str) -> dict[str, Any] | None:
        cur = self.con.execute(
            "SELECT name, version, content_hash, row_count, created_at, judge_config_id, policy, "
            "json_extract_string(stats, '$.inputs') AS inputs FROM dataset_versions "
            "WHERE name = ? ORDER BY version DESC LIMIT 1",
            [name],
        )
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else None

    def write_version(self, meta: dict[str, Any], rows: pa.Table) -> None:
        """A new version and its rows, in one transaction: a version is there whole or not at all."""
        with self.transaction():
            self.con.execute(
                "INSERT INTO dataset_versions (name, version, parent_version, created_at, judge_config_id, policy, "
                "source_revisions, row_count, content_hash, stats, simulated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [meta["name"], meta["version"], meta["parent_version"], _now(), meta["judge_config_id"],
                 json.dumps(meta["policy"]), json.dumps(meta["source_revisions"]), meta["row_count"],
                 meta["content_hash"], json.dumps(meta["stats"], default=str), bool(meta.get("simulated"))],
            )
            self._insert("dataset_rows", rows)

    def version_with_content(self, name: str, content_hash: str, config_id: str) -> dict[str, Any] | None:
        """An earlier version of `name` with exactly this content from this judge configuration."""
        cur = self.con.execute(
            "SELECT version, row_count, created_at FROM dataset_versions WHERE name = ? AND content_hash = ? "
            "AND judge_config_id = ? ORDER BY version LIMIT 1", [name, content_hash, config_id])
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else None

    def versions(self, name: str | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(
            "SELECT name, version, parent_version, created_at, row_count, content_hash, judge_config_id, "
            "published_target, published_tag, simulated FROM dataset_versions WHERE (? IS NULL OR name = ?) "
            "ORDER BY name, version",
            [name, name],
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def version_meta(self, name: str, version: int | None = None) -> dict[str, Any] | None:
        """One version's record (the latest when `version` is None), JSON fields decoded."""
        cur = self.con.execute(
            "SELECT * FROM dataset_versions WHERE name = ? AND (? IS NULL OR version = ?) ORDER BY version DESC LIMIT 1",
            [name, version, version],
        )
        row = cur.fetchone()
        if row is None:
            return None
        meta = dict(zip([d[0] for d in cur.description], row))
        for key in ("policy", "source_revisions", "stats"):
            meta[key] = json.loads(meta[key]) if isinstance(meta[key], str) else meta[key]
        return meta

    def mark_published(self, name: str, version: int, target: str, tag: str | None, commit: str | None) -> None:
        self.con.execute(
            "UPDATE dataset_versions SET published_target = ?, published_tag = ?, published_commit = ?, published_at = ? "
            "WHERE name = ? AND version = ?",
            [target, tag, commit, _now(), name, version],
        )

    def version_rows(self, name: str, version: int) -> list[dict[str, Any]]:
        cur = self.con.execute(
            "SELECT * EXCLUDE (name, version) FROM dataset_rows WHERE name = ? AND version = ? ORDER BY pair_id",
            [name, version],
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]
