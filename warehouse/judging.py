"""Judging: configurations, the pairs to judge and their texts, the judgment cache, merging worker
result files, evaluations, and what judging cost."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pyarrow as pa

from common.reasons import JudgeFailure
from warehouse.connection import JUDGMENT_TABLES, Part, _now


class PairText(NamedTuple):
    """What the judge reads of a pair (as `pair_texts` returns it, and the exchange's work files carry it, in
    this order)."""

    pair_id: str
    history: list[dict[str, str]]  # the turns before the two answers, the last one a user turn
    response_a: str
    response_b: str


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class JudgingStore(Part):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    def register_judge_config(self, config: dict[str, Any]) -> None:
        """A configuration's fields (`judge_config_id`, model, ..., simulated, weights), recorded once."""
        self.con.execute(
            "INSERT INTO judge_configs (judge_config_id, model, served_revision, prompt_version, temperature, top_p, "
            "max_tokens, created_at, simulated, weights, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [config["judge_config_id"], config["model"], config["served_revision"], config["prompt_version"],
             config.get("temperature"), config.get("top_p"), config.get("max_tokens"), _now(),
             bool(config.get("simulated")), config.get("weights") or None, config.get("kind") or "genrm"],
        )

    def link_ladder(self, config_id: str, rm_config_id: str) -> None:
        """A ladder's GenRM configuration reads the reward model's verdicts of `rm_config_id` beside its own."""
        self.con.execute("INSERT INTO judge_ladders VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET linked_at = "
                         "excluded.linked_at", [config_id, rm_config_id, _now()])

    def ladder_of(self, config_id: str) -> str | None:
        """The reward model's configuration a GenRM configuration's ladder reads (the latest linked), or None."""
        rows = self.con.execute("SELECT rm_config_id FROM judge_ladders WHERE judge_config_id = ? "
                                "ORDER BY linked_at DESC LIMIT 1", [config_id]).fetchall()
        return rows[0][0] if rows else None

    def curation_pair_ids(self) -> list[str]:
        """Ids of the pairs that go on to judging, in a stable order."""
        return [r[0] for r in self.con.execute("SELECT pair_id FROM pairs_for_curation ORDER BY pair_id").fetchall()]

    def pair_texts(self, pair_ids: list[str]) -> list[PairText]:
        """The texts of the given ids' pairs, in the given order."""
        if not pair_ids:
            return []
        rows = self._matching(
            "SELECT p.pair_id, p.history, p.response_a, p.response_b FROM candidate_pairs p JOIN lookup_keys k USING (pair_id)",
            pa.table({"pair_id": pa.array(pair_ids, pa.string())}),
        )
        by_id = {r[0]: PairText._make(r) for r in rows}
        return [by_id[i] for i in pair_ids if i in by_id]

    def judgment_states(self, config_id: str, pair_ids: list[str], table: str = "judgments") -> dict[tuple[str, str, int], tuple]:
        """{(pair id, order, sample): (status, attempts, margin_a, score_a, score_b, requests, failure_reason)}
        of recorded judgments (of curation pairs, or of benchmark comparisons with table="eval_judgments")."""
        if not pair_ids:
            return {}
        rows = self._matching(
            'SELECT j.pair_id, j."order", j.sample_index, j.status, j.attempts, j.margin_a, j.score_a, j.score_b, '
            "coalesce(j.requests, j.attempts), j.failure_reason "
            f"FROM {JUDGMENT_TABLES[table]} j JOIN lookup_keys k USING (pair_id) WHERE j.judge_config_id = ?",
            pa.table({"pair_id": pa.array(pair_ids, pa.string())}), [config_id],
        )
        return {(r[0], r[1], r[2]): r[3:] for r in rows}

    def reopen_exhausted(self, config_id: str, pair_ids: list[str], max_attempts: int) -> int:
        """Give the failed judgments of `pair_ids` at the attempt limit (`max_attempts` answers without a verdict)
        a fresh count of attempts, so that runs ask them again; their requests (what was paid) stay counted. An
        'ok' is never touched. Returns how many were reopened."""
        if not pair_ids:
            return 0
        with self._registered("lookup_keys", pa.table({"pair_id": pa.array(pair_ids, pa.string())})):
            return len(self.con.execute(
                "UPDATE judgments SET attempts = 0 WHERE judge_config_id = ? AND status <> 'ok' AND attempts >= ? "
                "AND pair_id IN (SELECT pair_id FROM lookup_keys) RETURNING pair_id",
                [config_id, max_attempts]).fetchall())

    def write_judgments(self, rows: pa.Table, table: str = "judgments") -> None:
        """Upsert judgments in one transaction: a success replaces an earlier failure; an 'ok' is final."""
        if rows.num_rows == 0:
            return
        with self.transaction():
            self._upsert_judgments(rows, JUDGMENT_TABLES[table])

    def _upsert_judgments(self, rows: pa.Table, table: str = "judgments") -> None:
        # Order-independent, so replaying files in any order ends the same: 'ok' is final, and a failure
        # only replaces a failure with no more attempts behind it.
        key = ("pair_id", "judge_config_id", "order", "sample_index")
        updates = ", ".join(f'"{c}" = excluded."{c}"' for c in rows.column_names if c not in key)
        self._insert(table, rows, f"ON CONFLICT DO UPDATE SET {updates} WHERE {table}.status <> 'ok' "
                                  f"AND (excluded.status = 'ok' OR excluded.attempts >= {table}.attempts)")

    def merged_file_keys(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT file_key FROM merged_result_files").fetchall()}

    def merge_result_file(self, key: str, digest: str, rows: pa.Table,
                          rejects: list[tuple[dict[str, Any], str]] = ()) -> str:
        """Merge one worker batch file's checked rows, its rejected rows and the fact that it was merged, in one
        transaction. Returns `merged`, `seen` (merged before with the same bytes) or `rewritten` (merged before
        with other bytes: files are never rewritten, so nothing of it is merged)."""
        with self.transaction():
            seen = self.con.execute("SELECT digest FROM merged_result_files WHERE file_key = ?", [key]).fetchone()
            if seen is not None:
                return "seen" if seen[0] == digest else "rewritten"
            if rows.num_rows:
                self._upsert_judgments(rows)
            if rejects:
                now = _now()
                self._insert("exchange_rejects", pa.table({
                    "file_key": [key] * len(rejects), "pair_id": [_text(r.get("pair_id")) for r, _ in rejects],
                    "order": [_text(r.get("order")) for r, _ in rejects],
                    "sample_index": pa.array([r.get("sample_index") if isinstance(r.get("sample_index"), int) else None
                                              for r, _ in rejects], pa.int32()),
                    "reason": [why for _, why in rejects],
                    "row_json": [json.dumps(r, default=str)[:100_000] for r, _ in rejects],
                    "rejected_at": [now] * len(rejects)}))
            self.con.execute("INSERT INTO merged_result_files VALUES (?, ?, ?, ?)", [key, digest, rows.num_rows, _now()])
        return "merged"

    def record_quarantined_file(self, key: str, moved_to: str, reason: str) -> None:
        self.con.execute("INSERT INTO exchange_quarantine VALUES (?, ?, ?, ?)", [key, moved_to, reason, _now()])

    def exchange_rejects(self) -> dict[str, int]:
        """Rejected exchange rows by reason, and quarantined files (`file:` prefix), over all merges."""
        rows = self.con.execute("SELECT reason, count(*) FROM exchange_rejects GROUP BY 1 UNION ALL "
                                "SELECT 'file: ' || reason, count(*) FROM exchange_quarantine GROUP BY 1 "
                                "ORDER BY 2 DESC, 1").fetchall()
        return {r: n for r, n in rows}

    def served_models(self, run_id: str, table: str = "judgments") -> list[str]:
        """The model names servers answered with in a judge run (a stand-in says SIMULATED here)."""
        return [r[0] for r in self.con.execute(
            f"SELECT DISTINCT served_model FROM {JUDGMENT_TABLES[table]} WHERE judge_run_id = ? "
            "AND served_model IS NOT NULL ORDER BY 1", [run_id]).fetchall()]

    def judged_by_source(self, config_id: str) -> dict[str, int]:
        """Pairs going on to curation that hold at least one 'ok' verdict under `config_id`, per source."""
        return dict(self.con.execute(
            "SELECT p.source, count(*) FROM pairs_for_curation p WHERE EXISTS (SELECT 1 FROM judgments j "
            "WHERE j.pair_id = p.pair_id AND j.judge_config_id = ? AND j.status = 'ok') GROUP BY p.source",
            [config_id]).fetchall())

    def eval_margins(self, config_id: str, item_ids: list[str]) -> dict[str, dict[tuple[str, int], float]]:
        """{item id: {(order, sample): A-side margin}} of the 'ok' benchmark judgments under `config_id`."""
        rows = self._matching(
            'SELECT j.pair_id, j."order", j.sample_index, j.margin_a FROM eval_judgments j JOIN lookup_keys k '
            "USING (pair_id) WHERE j.judge_config_id = ? AND j.status = 'ok'",
            pa.table({"pair_id": pa.array(item_ids, pa.string())}), [config_id])
        out: dict[str, dict[tuple[str, int], float]] = {}
        for item, order, sample, margin in rows:
            out.setdefault(item, {})[(order, sample)] = margin
        return out

    def record_evaluation(self, row: dict[str, Any]) -> None:
        row = {**row, "created_at": _now()}
        cols = list(row)
        self.con.execute(f"INSERT INTO judge_evaluations ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                         [json.dumps(v) if k == "result" else v for k, v in row.items()])

    def judging_totals(self, config_id: str) -> dict[str, Any]:
        """Requests, tokens and request-seconds of every judgment recorded under `config_id` so far."""
        row = self.con.execute(
            "SELECT count(*), coalesce(sum(requests), 0), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), "
            "coalesce(sum(latency_s), 0) FROM judgments WHERE judge_config_id = ?", [config_id]).fetchone()
        return dict(zip(("judgments", "requests", "tokens_in", "tokens_out", "request_seconds"), row))

    def pair_token_counts(self, pair_ids: list[str]) -> list[tuple[int, int, int]]:
        """(prompt, response A, response B) token counts of the given pairs, as the ingest stored them."""
        if not pair_ids:
            return []
        return [tuple(r) for r in self._matching(
            "SELECT p.prompt_tokens, p.response_a_tokens, p.response_b_tokens FROM candidate_pairs p "
            "JOIN lookup_keys k USING (pair_id)", pa.table({"pair_id": pa.array(pair_ids, pa.string())}))]

    def run_summaries(self, kind: str) -> list[dict[str, Any]]:
        """The summaries of the completed judge runs under configurations of judge `kind`, oldest first."""
        rows = self.con.execute(
            "SELECT r.summary FROM judge_runs r JOIN judge_configs c USING (judge_config_id) "
            "WHERE coalesce(c.kind, 'genrm') = ? AND r.status = 'completed' AND r.summary IS NOT NULL "
            "ORDER BY r.started_at", [kind]).fetchall()
        return [json.loads(s) if isinstance(s, str) else s for (s,) in rows]

    def measured_gpu_seconds(self, config_id: str) -> dict[str, float]:
        """The GPU-seconds the judge runs of `config_id` measured, whole (`gpu_seconds`) and per judge kind, with
        the runs of the reward model its ladder reads; runs recorded before measuring count nothing."""
        configs = [config_id, *([rm] if (rm := self.ladder_of(config_id)) else [])]
        rows = self.con.execute(
            "SELECT summary FROM judge_runs WHERE list_contains(?, judge_config_id) AND summary IS NOT NULL",
            [configs]).fetchall()
        spent: dict[str, float] = {"gpu_seconds": 0.0}
        for (summary,) in rows:
            cost = (json.loads(summary) if isinstance(summary, str) else summary or {}).get("cost") or {}
            spent["gpu_seconds"] += float(cost.get("gpu_seconds") or 0.0)
            for kind, judge in (cost.get("by_judge") or {}).items():
                spent[kind] = spent.get(kind, 0.0) + float(judge.get("gpu_seconds") or 0.0)
        return spent

    def judgment_counts(self, config_id: str) -> dict[str, int]:
        return dict(self.con.execute(
            "SELECT status, count(*) FROM judgments WHERE judge_config_id = ? GROUP BY status", [config_id]
        ).fetchall())

    def judging_status(self, max_attempts: int) -> list[dict[str, Any]]:
        """Per judge configuration: judgments ok and failed; curation pairs with a verdict (`pairs_judged`),
        those that can never have one as they are (`pairs_over_budget`: without a verdict, and a judgment failed
        for its length: over the judge's input budget, never sent, or too long for the server's context, never
        sent again), those without a verdict and a judgment at the attempt limit (`pairs_exhausted`: `max_attempts`
        answers without a verdict; runs ask it no more unless told to retry them), those a judge ladder's reward
        model scored and its rounds did not send on to this GenRM configuration (`pairs_at_reward_model`: left there
        as sure, or as hopeless; a later round climbs one on only if the rounds' rule then says so), and the rest
        (`pairs_pending`): what a run would still ask."""
        cur = self.con.execute(
            "WITH per AS (SELECT judge_config_id, count(*) FILTER (WHERE status = 'ok') AS ok, "
            "count(*) FILTER (WHERE status <> 'ok') AS failed FROM judgments GROUP BY 1), "
            "scored AS (SELECT DISTINCT l.judge_config_id, r.pair_id FROM judge_ladders l JOIN judgments r "
            "ON r.judge_config_id = l.rm_config_id AND r.status = 'ok'), "
            "pair_state AS (SELECT c.judge_config_id, p.pair_id, "
            "bool_or(j.status = 'ok') AS judged, bool_or(s.pair_id IS NOT NULL) AS at_rm, "
            "bool_or(j.status <> 'ok' AND j.failure_reason IN (?, ?)) AS too_long, "
            "bool_or(j.status <> 'ok' AND j.attempts >= ?) AS exhausted "
            "FROM judge_configs c CROSS JOIN pairs_for_curation p LEFT JOIN judgments j "
            "ON j.pair_id = p.pair_id AND j.judge_config_id = c.judge_config_id "
            "LEFT JOIN scored s ON s.pair_id = p.pair_id AND s.judge_config_id = c.judge_config_id GROUP BY ALL), "
            "pairs AS (SELECT judge_config_id, count(*) FILTER (WHERE judged) AS pairs_judged, "
            "count(*) FILTER (WHERE judged IS NOT TRUE AND too_long) AS pairs_over_budget, "
            "count(*) FILTER (WHERE judged IS NOT TRUE AND too_long IS NOT TRUE AND exhausted) AS pairs_exhausted, "
            "count(*) FILTER (WHERE judged IS NOT TRUE AND too_long IS NOT TRUE AND exhausted IS NOT TRUE "
            "AND at_rm) AS pairs_at_reward_model, "
            "count(*) FILTER (WHERE judged IS NOT TRUE AND too_long IS NOT TRUE AND exhausted IS NOT TRUE "
            "AND at_rm IS NOT TRUE) AS pairs_pending FROM pair_state GROUP BY 1) "
            "SELECT c.judge_config_id, c.model, coalesce(c.simulated, false) AS simulated, c.weights, "
            "coalesce(per.ok, 0) AS ok, coalesce(per.failed, 0) AS failed, "
            "coalesce(pairs.pairs_judged, 0) AS pairs_judged, coalesce(pairs.pairs_pending, 0) AS pairs_pending, "
            "coalesce(pairs.pairs_over_budget, 0) AS pairs_over_budget, "
            "coalesce(pairs.pairs_exhausted, 0) AS pairs_exhausted, "
            "coalesce(pairs.pairs_at_reward_model, 0) AS pairs_at_reward_model "
            "FROM judge_configs c LEFT JOIN per USING (judge_config_id) LEFT JOIN pairs USING (judge_config_id) "
            "WHERE per.judge_config_id IS NOT NULL ORDER BY c.created_at",
            [JudgeFailure.OVER_BUDGET.value, JudgeFailure.TOO_LONG.value, max_attempts])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    def judge_config(self, config_id: str) -> dict[str, Any]:
        cur = self.con.execute("SELECT * FROM judge_configs WHERE judge_config_id = ?", [config_id])
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else {"judge_config_id": config_id}

    def config_weights(self, config_id: str) -> str | None:
        """What answered for this configuration where not the judge's published weights (None: the published)."""
        row = self.con.execute("SELECT weights FROM judge_configs WHERE judge_config_id = ?", [config_id]).fetchone()
        return row[0] if row else None

    def config_is_simulated(self, config_id: str) -> bool:
        """Whether the stand-in answered for this configuration: flagged so, or any verdict's model says so."""
        return bool(self.con.execute(
            "SELECT coalesce((SELECT simulated FROM judge_configs WHERE judge_config_id = $1), false) OR EXISTS "
            "(SELECT 1 FROM judgments WHERE judge_config_id = $1 AND served_model LIKE '%SIMULATED%')",
            [config_id]).fetchone()[0])
