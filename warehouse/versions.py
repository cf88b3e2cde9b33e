"""Dataset versions: what they are built from, their rows, and where they were published."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from warehouse.connection import Part, _now

# A prompt's canonical JSON, as Python's json.dumps(ensure_ascii=False, separators=(",", ":")) writes it
# (`tasks.curate.pool.prompt_json`): DuckDB escapes control characters with upper-case hex, Python lower-case.
_PROMPT_JSON = "to_json(list_transform(p.history, lambda m: [m.role, m.content]))"
for _c in (0x0B, 0x0E, 0x0F, *range(0x1A, 0x20)):
    _PROMPT_JSON = f"replace({_PROMPT_JSON}, '\\u{_c:04X}', '\\u{_c:04x}')"

# A version's rows with their texts: which response is chosen comes with the row, the texts from the pair, or
# from `redacted_texts` (the pair's texts with personal data and secrets replaced by placeholders) where it has
# the pair.
_ROWS_WITH_TEXTS = """
    SELECT r.*, coalesce(x.history, p.history) AS prompt,
           CASE r.chosen_side WHEN 'a' THEN coalesce(x.response_a, p.response_a)
                ELSE coalesce(x.response_b, p.response_b) END AS chosen,
           CASE r.chosen_side WHEN 'a' THEN coalesce(x.response_b, p.response_b)
                ELSE coalesce(x.response_a, p.response_a) END AS rejected
    FROM version_rows r JOIN candidate_pairs p USING (pair_id) LEFT JOIN redacted_texts x USING (pair_id)"""
# The texts `redacted_texts` holds: none when a version redacts nothing.
REDACTED_SCHEMA = pa.schema([("pair_id", pa.string()),
                             ("history", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
                             ("response_a", pa.string()), ("response_b", pa.string())])
NO_REDACTION = REDACTED_SCHEMA.empty_table()


def _field(name: str, kind: str) -> str:
    """One field of a row's digest: floats at a fixed precision, NULL distinct from any text."""
    text = {"float": f"printf('%.6f', {name})", "json": f"to_json({name})"}.get(kind, f"{name}::VARCHAR")
    return f"coalesce({text}, chr(0))"


_DIGEST_FIELDS = [_field(n, k) for n, k in (
    ("pair_id", ""), ("prompt", "json"), ("chosen", ""), ("rejected", ""), ("chosen_side", ""), ("margin", "float"),
    ("confidence", "float"), ("p_correct", "float"), ("orders_agree", ""), ("scores_agree", ""),
    ("spread", "float"), ("verdicts", ""), ("human_label", "float"), ("human_agrees", ""), ("source", ""),
    ("source_id", ""), ("source_revision", ""), ("domain", ""), ("language", ""), ("split", ""))] + [
    # only where reviewers decided the row: concat_ws skips a NULL, so a row without them digests as before
    "CASE WHEN reviewers_choice IS NOT NULL THEN 'reviewed:' || reviewers_choice || ':' || reviewers::VARCHAR END",
    # only in a certified version: the score that certified the row
    "CASE WHEN certification_score IS NOT NULL THEN 'certified:' || printf('%.6f', certification_score) END"]


class VersionStore(Part):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    def latest_judge_config_id(self) -> str | None:
        # a reward model's verdicts are read through its ladder's GenRM configuration, never a version's own
        row = self.con.execute(
            "SELECT judge_config_id FROM (SELECT judge_config_id, finished_at FROM judgments WHERE status = 'ok' "
            "AND judge_config_id NOT IN (SELECT judge_config_id FROM judge_configs WHERE kind <> 'genrm') "
            "UNION ALL SELECT judge_config_id, linked_at FROM judge_ladders) GROUP BY judge_config_id "
            "ORDER BY max(finished_at) DESC LIMIT 1"
        ).fetchall()
        return row[0][0] if row else None

    def pool_sources(self) -> list[str]:
        """The sources of the pairs a version's pool holds (`judged_pool`'s pairs: every pair not a near
        duplicate), sorted: what a version's `sources` may name."""
        return [r[0] for r in self.con.execute(
            "SELECT DISTINCT source FROM candidate_pairs WHERE pair_id NOT IN (SELECT pair_id FROM near_duplicates) "
            "ORDER BY 1").fetchall()]

    def judged_pool(self, config_id: str, markdown_pattern: str) -> tuple[pa.Table, pa.Table]:
        """(pairs, verdicts): every pair that is not a near duplicate, in pair id order, with what a version's
        selection needs but not its texts (their lengths in characters, their markdown marks counted with
        the RE2 `markdown_pattern`, the prompt's canonical JSON); and the ok verdicts under `config_id`, each
        with `i`, the index of its pair in the first table, in (pair, order, sample) order."""
        pool = """
            SELECT p.pair_id, row_number() OVER (ORDER BY p.pair_id) - 1 AS i FROM candidate_pairs p
            WHERE p.pair_id NOT IN (SELECT pair_id FROM near_duplicates)"""
        rm_config = self._db.judging.ladder_of(config_id)
        # a ladder's configuration reads its reward model's margins beside its own verdicts
        rm_column = "" if rm_config is None else """,
                   (SELECT r.margin_a FROM judgments r WHERE r.pair_id = p.pair_id AND r.judge_config_id = $rm
                    AND r.status = 'ok' AND r."order" = 'none' AND r.sample_index = 0) AS rm_margin"""
        pairs = self.con.sql(
            f"""
            WITH pool AS ({pool}),
            ok AS (SELECT j.pair_id, bool_and(r.one_order_on_purpose) AS one_order_on_purpose
                   FROM judgments j LEFT JOIN judge_runs r ON r.run_id = j.judge_run_id
                   WHERE j.judge_config_id = $config AND j.status = 'ok' GROUP BY j.pair_id)
            SELECT p.pair_id, p.source, p.source_id, p.source_revision, p.human_label, p.both_bad, p.domain,
                   -- the model names under the canonical pair's keys (schemas.pair.MODEL_A / MODEL_B), any source
                   p.language, json_extract_string(p.metadata, '$.model_a') AS model_a,
                   json_extract_string(p.metadata, '$.model_b') AS model_b,
                   p.pair_id IN (SELECT pair_id FROM contamination) AS contaminated,
                   -- judged by runs whose strategy stops at one order on purpose (when the first is decisive)
                   coalesce(ok.one_order_on_purpose, false) AS one_order_on_purpose,
                   p.pair_id IN (SELECT pair_id FROM judgments WHERE judge_config_id = $config AND status <> 'ok')
                       AS has_failed,
                   length(p.response_a) AS len_a, length(p.response_b) AS len_b,
                   len(regexp_extract_all(p.response_a, $markdown)) AS md_a,
                   len(regexp_extract_all(p.response_b, $markdown)) AS md_b,
                   {_PROMPT_JSON} AS prompt_json{rm_column}
            FROM pool JOIN candidate_pairs p USING (pair_id) LEFT JOIN ok USING (pair_id)
            ORDER BY pool.i
            """, params={"config": config_id, "markdown": markdown_pattern,
                         **({} if rm_config is None else {"rm": rm_config})}).to_arrow_table()
        verdicts = self.con.sql(
            f"""
            WITH pool AS ({pool})
            SELECT pool.i, j."order" = 'ab' AS ab, j.sample_index AS sample, j.score_a, j.score_b, j.margin_a AS margin
            FROM judgments j JOIN pool USING (pair_id)
            WHERE j.judge_config_id = $config AND j.status = 'ok'
            ORDER BY pool.i, j."order", j.sample_index
            """, params={"config": config_id}).to_arrow_table()
        return pairs, verdicts

    def version_inputs(self, config_id: str) -> str:
        """A fingerprint of everything a version is built from (pairs, near duplicates, contamination, the
        configuration's verdicts, and a ladder's reward-model verdicts): equal fingerprints and policy mean equal
        content, without reading a row."""
        verdicts = ("(SELECT count(*) || ':' || coalesce(max(finished_at)::VARCHAR, '') FROM judgments "
                    "WHERE judge_config_id = ? AND status = 'ok')")
        configs = [config_id]
        rm_config = self._db.judging.ladder_of(config_id)
        if rm_config is not None:  # a ladder's reward-model verdicts change its versions too
            configs.append(rm_config)
        (row,) = self.con.execute(
            "SELECT (SELECT count(*) FROM candidate_pairs) || '/' || (SELECT count(*) FROM near_duplicates) || '/' "
            "|| (SELECT count(*) FROM contamination) || '/' || " + " || '/' || ".join([verdicts] * len(configs)),
            configs,
        ).fetchall()
        # reviews change versions too (warehouse.reviews), and so do the findings a version redacts or drops by
        return f"{config_id}/{row[0]}{self._db.reviews.review_inputs()}{self._db.pii.fingerprint()}"

    def latest_version(self, name: str) -> dict[str, Any] | None:
        cur = self.con.execute(
            "SELECT name, version, content_hash, row_count, created_at, judge_config_id, policy, "
            "json_extract_string(stats, '$.inputs') AS inputs FROM dataset_versions "
            "WHERE name = ? ORDER BY version DESC LIMIT 1",
            [name],
        )
        row = next(iter(cur.fetchall()), None)
        return dict(zip([d[0] for d in cur.description], row)) if row else None

    def row_digests(self, rows: pa.Table, redacted: pa.Table = NO_REDACTION) -> list[str]:
        """Each row's digest (md5 of every field, the texts from the pairs table or, where it has the pair,
        `redacted`), in pair id order: what a version's content hash is made of. `rows`:
        `tasks.curate.select.version_table`; `redacted`: `REDACTED_SCHEMA`."""
        with self._registered("version_rows", rows), self._registered("redacted_texts", redacted):
            return [d for (d,) in self.con.execute(
                f"SELECT md5(concat_ws(chr(31), {', '.join(_DIGEST_FIELDS)})) FROM ({_ROWS_WITH_TEXTS}) "
                "ORDER BY pair_id").fetchall()]

    def token_estimates(self, rows: pa.Table) -> pa.Table:
        """Each row's estimated tokens (`prompt`, `chosen`, `rejected`; chat-template tokens included), as the
        ingest stored them with its pair (migration 019), in pair id order. `rows`:
        `tasks.curate.select.version_table`."""
        with self._registered("version_rows", rows):
            return self.con.sql(
                """SELECT p.prompt_tokens AS prompt,
                          CASE r.chosen_side WHEN 'a' THEN p.response_a_tokens ELSE p.response_b_tokens END AS chosen,
                          CASE r.chosen_side WHEN 'a' THEN p.response_b_tokens ELSE p.response_a_tokens END AS rejected
                   FROM version_rows r JOIN candidate_pairs p USING (pair_id)""").to_arrow_table()

    def write_version(self, meta: dict[str, Any], rows: pa.Table, redacted: pa.Table = NO_REDACTION) -> None:
        """A new version and its rows, in one transaction: a version is there whole or not at all. `rows`:
        `tasks.curate.select.version_table`; the texts are copied from the pairs table, or from `redacted` where
        it has the pair (the warehouse's pairs keep their texts as ingested)."""
        cols = ", ".join(f'"{c}"' for c in ("prompt", "chosen", "rejected", *rows.column_names))
        with self.transaction(), self._registered("version_rows", rows), self._registered("redacted_texts", redacted):
            self.con.execute(
                "INSERT INTO dataset_versions (name, version, parent_version, created_at, judge_config_id, policy, "
                "source_revisions, row_count, content_hash, stats, simulated, judge_weights) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [meta["name"], meta["version"], meta["parent_version"], _now(), meta["judge_config_id"],
                 json.dumps(meta["policy"]), json.dumps(meta["source_revisions"]), meta["row_count"],
                 meta["content_hash"], json.dumps(meta["stats"], default=str), bool(meta.get("simulated")),
                 meta.get("judge_weights") or None],
            )
            self.con.execute(f"INSERT INTO dataset_rows (name, version, {cols}) "
                             f"SELECT $name, $version, {cols} FROM ({_ROWS_WITH_TEXTS})",
                             {"name": meta["name"], "version": meta["version"]})

    def version_with_content(self, name: str, content_hash: str, config_id: str) -> dict[str, Any] | None:
        """An earlier version of `name` with exactly this content from this judge configuration."""
        cur = self.con.execute(
            "SELECT version, row_count, created_at FROM dataset_versions WHERE name = ? AND content_hash = ? "
            "AND judge_config_id = ? ORDER BY version LIMIT 1", [name, content_hash, config_id])
        row = next(iter(cur.fetchall()), None)
        return dict(zip([d[0] for d in cur.description], row)) if row else None

    def versions(self, name: str | None = None) -> list[dict[str, Any]]:
        """Each version's record with `figures`: the counts its card shows (`tasks.curate.figures`), as stored
        with it (None for a version built before they were recorded), and the GPU-seconds its judge runs measured
        (`gpu_seconds`: whole, by judge, per kept pair; None for a version built before they were measured)."""
        cur = self.con.execute(
            "SELECT name, version, parent_version, created_at, row_count, content_hash, judge_config_id, "
            "published_target, published_tag, simulated, judge_weights, "
            "json_object('pairs_judged', stats->'$.pairs_judged', 'pairs_kept', row_count, "
            "            'not_judged', stats->'$.not_judged', 'human_agreement', stats->'$.human_agreement', "
            "            'max_length_keeping', stats->'$.lengths.max_length_keeping', "
            "            'certification', CASE WHEN (stats->'$.certification') IS NOT NULL THEN json_object("
            "                'target_agreement', stats->'$.certification.target_agreement', "
            "                'risk', stats->'$.certification.risk', 'labels', stats->'$.certification.labels', "
            "                'estimated_agreement', stats->'$.certification.estimated_agreement', "
            "                'not_covered', stats->'$.certification.not_covered', "
            "                'kept_not_covered', stats->'$.certification.kept_not_covered', "
            "                'coverage', stats->'$.certification.coverage') END, "
            "            'pii', CASE WHEN (stats->'$.pii') IS NOT NULL THEN json_object("
            "                'redacted', stats->'$.pii.redacted', 'kept', stats->'$.pii.kept', "
            "                'dropped_pairs', stats->'$.pii.dropped_pairs') END, "
            "            'gpu_seconds', CASE WHEN (stats->'$.cost.gpu_seconds') IS NOT NULL THEN json_object("
            "                'whole', stats->'$.cost.gpu_seconds', 'by_judge', stats->'$.cost.gpu_seconds_by_judge', "
            "                'per_kept_pair', stats->'$.cost.gpu_seconds_per_kept_pair') END) AS figures "
            "FROM dataset_versions WHERE (? IS NULL OR name = ?) ORDER BY name, version",
            [name, name],
        )
        cols = [d[0] for d in cur.description]
        out = [dict(zip(cols, r)) for r in cur.fetchall()]
        for v in out:
            figures = json.loads(v["figures"])
            v["figures"] = figures if figures.get("pairs_judged") is not None else None
        return out

    def version_meta(self, name: str, version: int | None = None) -> dict[str, Any] | None:
        """One version's record (the latest when `version` is None), JSON fields decoded."""
        cur = self.con.execute(
            "SELECT * FROM dataset_versions WHERE name = ? AND (? IS NULL OR version = ?) ORDER BY version DESC LIMIT 1",
            [name, version, version],
        )
        row = next(iter(cur.fetchall()), None)
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
