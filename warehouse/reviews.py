"""Human review: Label Studio projects, the tasks pushed to them (with how each task's sides were shown), why
each pair was selected, the annotations pulled back and each reviewed pair's outcome."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from warehouse.connection import Part, _now

_REVIEW_COLUMNS = ("project_key", "annotation_id", "server", "ls_task_id", "pair_id", "choice", "side", "annotator_id",
                   "annotator", "created_at", "updated_at", "lead_time_s", "revision", "pulled_at",
                   "claimed_annotator_id", "withdrawn_at", "withdrawn_reason")


_REVIEW_SCHEMA = pa.schema([
    ("project_key", pa.string()), ("annotation_id", pa.int64()), ("server", pa.string()), ("ls_task_id", pa.int64()),
    ("pair_id", pa.string()), ("choice", pa.string()), ("side", pa.string()), ("annotator_id", pa.int64()),
    ("annotator", pa.string()), ("created_at", pa.timestamp("us")), ("updated_at", pa.timestamp("us")),
    ("lead_time_s", pa.float64()), ("revision", pa.int64()), ("pulled_at", pa.timestamp("us")),
    ("claimed_annotator_id", pa.int64()), ("withdrawn_at", pa.timestamp("us")), ("withdrawn_reason", pa.string())])


def _review_table(rows: list[dict[str, Any]], pulled_at: Any) -> pa.Table:
    """Rows as human_reviews holds them; a review withdrawn now (a reason, no time yet) is withdrawn at `pulled_at`."""
    return pa.Table.from_pylist([{**{c: r.get(c) for c in _REVIEW_COLUMNS}, "pulled_at": pulled_at,
                                  "withdrawn_at": r.get("withdrawn_at") or (pulled_at if r.get("withdrawn_reason")
                                                                            else None)} for r in rows],
                                schema=_REVIEW_SCHEMA)


def _dicts(cur) -> list[dict[str, Any]]:
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


class ReviewStore(Part):
    """Named queries over the warehouse's one connection (see `warehouse.store.Warehouse`)."""

    # -- projects ---------------------------------------------------------------------------------
    def review_project(self, project_key: str) -> dict[str, Any] | None:
        rows = _dicts(self.con.execute("SELECT * FROM review_projects WHERE project_key = ?", [project_key]))
        return rows[0] if rows else None

    def review_projects_on(self, server_id: str, url: str) -> list[dict[str, Any]]:
        """The projects this warehouse pushed to on one Label Studio server, whatever URL it was reached at (a
        project recorded before servers were told by their identity: at the URL it was recorded at), each with
        the ids of its tasks recorded in Label Studio (`task_ids`)."""
        projects = _dicts(self.con.execute(
            "SELECT * FROM review_projects WHERE server_id = ? OR (server_id IS NULL AND url = ?) ORDER BY created_at",
            [server_id, url]))
        tasks: dict[str, set[int]] = {}
        for key, task in self.con.execute(
                "SELECT t.project_key, t.ls_task_id FROM review_tasks t JOIN review_projects p USING (project_key) "
                "WHERE t.ls_task_id IS NOT NULL AND (p.server_id = ? OR (p.server_id IS NULL AND p.url = ?))",
                [server_id, url]).fetchall():
            tasks.setdefault(key, set()).add(task)
        return [{**p, "task_ids": tasks.get(p["project_key"], set())} for p in projects]

    def review_project_key(self, server_id: str, url: str, ls_project_id: int) -> str | None:
        """The key this warehouse knows a server's project by, or None when it knows it not."""
        rows = self.con.execute(
            "SELECT project_key FROM review_projects WHERE ls_project_id = ? AND (server_id = ? OR "
            "(server_id IS NULL AND url = ?)) ORDER BY server_id IS NULL, created_at", [ls_project_id, server_id, url]
        ).fetchall()
        return rows[0][0] if rows else None

    def save_review_project(self, project_key: str, url: str, ls_project_id: int, title: str, interface: str,
                            server_id: str) -> None:
        """Record a project (its title kept current). A project recorded before servers were told by their identity
        gets it now, and its reviews' reviewers with it (a reviewer is a user of a server)."""
        with self.transaction():
            self.con.execute(
                "INSERT INTO review_projects (project_key, url, ls_project_id, title, interface, created_at, "
                "server_id) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project_key) DO UPDATE SET title = excluded.title, "
                "server_id = coalesce(review_projects.server_id, excluded.server_id)",
                [project_key, url, ls_project_id, title, interface, _now(), server_id])
            self.con.execute("UPDATE human_reviews SET server = ? WHERE project_key = ? AND server <> ?",
                             [server_id, project_key, server_id])

    # -- what can be pushed -----------------------------------------------------------------------
    def review_state(self, project_key: str) -> dict[str, set[str]]:
        """Pair ids: with a task in this project (`tasks`), reviewed anywhere (`reviewed`), and already selected
        here by each selection (`selected:<selection>`)."""
        state: dict[str, set[str]] = {
            "tasks": {p for (p,) in self.con.execute("SELECT pair_id FROM review_tasks WHERE project_key = ?",
                                                     [project_key]).fetchall()},
            "reviewed": {p for (p,) in self.con.execute(
                "SELECT DISTINCT pair_id FROM human_reviews WHERE withdrawn_at IS NULL").fetchall()},
        }
        for selection, pair in self.con.execute(
                "SELECT selection, pair_id FROM review_selections WHERE project_key = ?", [project_key]).fetchall():
            state.setdefault(f"selected:{selection}", set()).add(pair)
        return state

    def review_version_pushed(self, name: str, version: int) -> bool:
        """Whether this version was pushed for review (to any project, any selection)."""
        return self.con.execute("SELECT count(*) FROM review_pushes WHERE name = ? AND version = ?",
                                [name, version]).fetchall()[0][0] > 0

    def review_pair_texts(self, pair_ids: list[str]) -> list[dict[str, Any]]:
        """(pair_id, history, response_a, response_b) of the given pairs, in the order given."""
        if not pair_ids:
            return []
        keys = pa.table({"pair_id": pa.array(pair_ids, pa.string()), "k": pa.array(range(len(pair_ids)), pa.int64())})
        with self._registered("lookup_keys", keys):
            return _dicts(self.con.execute(
                "SELECT p.pair_id, p.history, p.response_a, p.response_b FROM lookup_keys k "
                "JOIN candidate_pairs p USING (pair_id) ORDER BY k.k"))

    # -- tasks ------------------------------------------------------------------------------------
    def plan_review(self, project_key: str, tasks: pa.Table, selections: pa.Table, push: dict[str, Any]) -> None:
        """New tasks (planned: no Label Studio id yet), selection memberships and the push itself, in one
        transaction. `tasks`: pair_id, answer_1; `selections`: the review_selections columns but project_key and
        selected_at; `push`: name, version, selection, limit, seed, selected, new_tasks."""
        now = _now()
        with self.transaction():
            self.con.execute(
                'INSERT INTO review_pushes (project_key, name, version, selection, "limit", seed, selected, new_tasks, '
                "pushed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [project_key, push["name"], push["version"], push["selection"], push["limit"], push.get("seed"),
                 push["selected"], push["new_tasks"], now])
            if tasks.num_rows:
                with self._registered("planned", tasks):
                    self.con.execute(
                        "INSERT INTO review_tasks (project_key, pair_id, answer_1, planned_at) "
                        "SELECT ?, pair_id, answer_1, ? FROM planned", [project_key, now])
            if selections.num_rows:
                cols = ", ".join(selections.column_names)
                with self._registered("chosen", selections):
                    self.con.execute(
                        f"INSERT INTO review_selections (project_key, selected_at, {cols}) SELECT ?, ?, {cols} "
                        "FROM chosen ON CONFLICT DO NOTHING", [project_key, now])

    def planned_review_tasks(self, project_key: str) -> list[dict[str, Any]]:
        """Tasks planned but not yet known to be in Label Studio: (pair_id, answer_1), by pair id."""
        return _dicts(self.con.execute(
            "SELECT pair_id, answer_1 FROM review_tasks WHERE project_key = ? AND ls_task_id IS NULL ORDER BY pair_id",
            [project_key]))

    def record_pushed_tasks(self, project_key: str, pushed: list[tuple[str, int, str]]) -> None:
        """(pair_id, Label Studio task id, digest of the texts it shows) of planned tasks Label Studio now holds:
        each gets its id and digest. A pair not planned in this project, or whose task is recorded already, is
        left as it is: only tasks this warehouse planned become its own."""
        if not pushed:
            return
        rows = pa.table({"pair_id": pa.array([p for p, _, _ in pushed], pa.string()),
                         "ls_task_id": pa.array([t for _, t, _ in pushed], pa.int64()),
                         "texts_digest": pa.array([d for _, _, d in pushed], pa.string())})
        with self.transaction(), self._registered("pushed", rows):
            self.con.execute(
                "UPDATE review_tasks SET ls_task_id = p.ls_task_id, texts_digest = p.texts_digest, pushed_at = ? "
                "FROM pushed p WHERE review_tasks.project_key = ? AND review_tasks.pair_id = p.pair_id "
                "AND review_tasks.ls_task_id IS NULL", [_now(), project_key])

    def record_task_digests(self, project_key: str, digests: dict[int, str]) -> None:
        """The digests of tasks recorded before digests were (from their pairs' texts), where there is none."""
        if not digests:
            return
        rows = pa.table({"ls_task_id": pa.array(list(digests), pa.int64()),
                         "texts_digest": pa.array(list(digests.values()), pa.string())})
        with self.transaction(), self._registered("digests", rows):
            self.con.execute(
                "UPDATE review_tasks SET texts_digest = d.texts_digest FROM digests d "
                "WHERE review_tasks.project_key = ? AND review_tasks.ls_task_id = d.ls_task_id "
                "AND review_tasks.texts_digest IS NULL", [project_key])

    def mark_texts_changed(self, project_key: str, ls_task_ids: list[int]) -> None:
        """Tasks found showing other texts than they were pushed with: marked once, for good."""
        if not ls_task_ids:
            return
        with self.transaction(), self._registered("changed_tasks", pa.table({"ls_task_id": pa.array(ls_task_ids,
                                                                                                   pa.int64())})):
            self.con.execute(
                "UPDATE review_tasks SET texts_changed_at = ? FROM changed_tasks c WHERE review_tasks.project_key = ? "
                "AND review_tasks.ls_task_id = c.ls_task_id AND review_tasks.texts_changed_at IS NULL",
                [_now(), project_key])

    def review_tasks_of(self, project_key: str) -> list[dict[str, Any]]:
        """Every task of a project: pair_id, answer_1, ls_task_id (None while planned only), texts_digest and
        texts_changed_at."""
        return _dicts(self.con.execute(
            "SELECT pair_id, answer_1, ls_task_id, texts_digest, texts_changed_at FROM review_tasks "
            "WHERE project_key = ? ORDER BY pair_id", [project_key]))

    def review_task_counts(self, project_key: str) -> tuple[int, int]:
        """(tasks known to be in Label Studio, tasks planned only) for a project."""
        ((pushed, planned),) = self.con.execute(
            "SELECT count(ls_task_id), count(*) - count(ls_task_id) FROM review_tasks WHERE project_key = ?",
            [project_key]).fetchall()
        return int(pushed), int(planned)

    # -- annotations ------------------------------------------------------------------------------
    def human_reviews_of(self, project_key: str) -> dict[int, dict[str, Any]]:
        """annotation id -> its row as last pulled (withdrawn ones too), for one project."""
        return {r["annotation_id"]: r for r in _dicts(self.con.execute(
            "SELECT * FROM human_reviews WHERE project_key = ?", [project_key]))}

    def land_reviews(self, new: list[dict[str, Any]], changed: list[dict[str, Any]],
                     resolve: Callable[[pa.Table], pa.Table]) -> None:
        """New annotations and changed ones (each changed row's earlier state goes to the history; a withdrawn one
        is a change too), then every pair's outcome again (`resolve`: every vote that counts, as pair_id, reviewer,
        side, updated_at -> the review_outcomes columns but resolved_at), all in one transaction."""
        now = _now()
        with self.transaction():
            if changed:
                table = _review_table(changed, now)
                with self._registered("changed_reviews", table):
                    cols = ", ".join(_REVIEW_COLUMNS)
                    earlier = ", ".join(f"h.{c}" for c in _REVIEW_COLUMNS)
                    self.con.execute(
                        f"INSERT INTO human_review_history ({cols}, superseded_at) SELECT {earlier}, ? "
                        "FROM human_reviews h JOIN changed_reviews c USING (project_key, annotation_id)", [now])
                    sets = ", ".join(f"{c} = c.{c}" for c in _REVIEW_COLUMNS[2:])
                    self.con.execute(
                        f"UPDATE human_reviews SET {sets} FROM changed_reviews c WHERE human_reviews.project_key = "
                        "c.project_key AND human_reviews.annotation_id = c.annotation_id")
            if new:
                self._insert("human_reviews", _review_table(new, now))
            votes = self.con.sql(
                "SELECT pair_id, server || '#' || annotator_id AS reviewer, side, updated_at FROM human_reviews "
                "WHERE withdrawn_at IS NULL ORDER BY pair_id, reviewer, updated_at").to_arrow_table()
            outcomes = resolve(votes)
            self.con.execute("DELETE FROM review_outcomes")
            if outcomes.num_rows:
                cols = ", ".join(outcomes.column_names)
                with self._registered("resolved", outcomes):
                    self.con.execute(
                        f"INSERT INTO review_outcomes ({cols}, resolved_at) SELECT {cols}, ? FROM resolved", [now])

    def review_history_count(self, project_key: str | None = None) -> int:
        return self.con.execute("SELECT count(*) FROM human_review_history WHERE ? IS NULL OR project_key = ?",
                                [project_key, project_key]).fetchall()[0][0]

    # -- what versions use ------------------------------------------------------------------------
    def review_outcomes(self) -> pa.Table:
        """Every reviewed pair's outcome (pair_id, outcome, reviewers), by pair id."""
        return self.con.sql("SELECT pair_id, outcome, reviewers FROM review_outcomes ORDER BY pair_id").to_arrow_table()

    def review_voters(self) -> pa.Table:
        """(pair_id, reviewer) of every vote that counts (not withdrawn), once per reviewer of a pair, by pair id:
        who stands behind a pair's outcome."""
        return self.con.sql("SELECT DISTINCT pair_id, server || '#' || annotator_id AS reviewer FROM human_reviews "
                            "WHERE withdrawn_at IS NULL ORDER BY pair_id, reviewer").to_arrow_table()

    def review_selections(self) -> pa.Table:
        """(pair_id, selection) of every pair selected for review in any project, once per selection."""
        return self.con.sql("SELECT DISTINCT pair_id, selection FROM review_selections ORDER BY pair_id, selection"
                            ).to_arrow_table()

    def review_inputs(self) -> str:
        """What a version reads of the reviews, fingerprinted ("" while there are none): any pull that changes an
        outcome, or withdraws a review, changes it. A warehouse opened read-only before its migration to reviews
        has none."""
        present = {c for (c,) in self.con.execute(
            "SELECT table_name || '.' || column_name FROM duckdb_columns() WHERE schema_name = 'main' AND "
            "table_name IN ('review_outcomes', 'human_reviews')").fetchall()}
        if "review_outcomes.pair_id" not in present:
            return ""
        ((n, last),) = self.con.execute("SELECT count(*), max(resolved_at) FROM review_outcomes").fetchall()
        withdrawn, at = 0, None
        if "human_reviews.withdrawn_at" in present:
            ((withdrawn, at),) = self.con.execute(
                "SELECT count(*), max(withdrawn_at) FROM human_reviews WHERE withdrawn_at IS NOT NULL").fetchall()
        if not (n or withdrawn):
            return ""
        return f"/reviews:{n}:{last}" + (f"/withdrawn:{withdrawn}:{at}" if withdrawn else "")

    def review_progress(self) -> list[dict[str, Any]]:
        """The dashboard view's rows, from the warehouse itself (`curate review pull --json`)."""
        return _dicts(self.con.execute("SELECT * FROM dash_review_progress"))


def review_progress_frame(snap: Any) -> Any:
    """The dashboard's review progress per project, over its snapshot (`warehouse.dashboard.Snapshot`)."""
    return snap.frame("SELECT * FROM dash_review_progress")
