"""Pulling annotations back from Label Studio: read everything first, then land what it says, checked.

Reading is network only (the warehouse is closed meanwhile, so a slow server holds no other command back):
which projects this warehouse knows on that server (by the server's identity, whatever URL reached it), every
task with its annotations, the users, and for a task recorded but no longer listed, whether it is gone.

Landing believes nothing it cannot check: only tasks this warehouse pushed (or a push cut short created for a
pair it planned, with the planned texts) count; a task whose texts are not those it was pushed with (its digest)
has its annotations rejected, for good (which were made on which texts cannot be told); the reviewer is who
Label Studio recorded as posting (never the `completed_by` a client may set); an annotation that is no review
(malformed, skipped, its poster unknown) is one rejection with its reason, and the rest goes on. A review landed earlier whose task or annotation was deleted there, or that is
rejected now, is withdrawn: kept, with why, counted for nothing. New, changed and withdrawn reviews land with every
outcome resolved again in one transaction; a pull that finds nothing new writes nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from common.errors import NotFoundError
from common.reasons import ReviewReject
from schemas.summaries import ReviewPullSummary
from tasks.review.interface import INTERFACE
from tasks.review.label_studio import LabelStudio, LabelStudioError, Project
from tasks.review.labels import Changes, annotations_of, changes, record_id, review_rows, withdrawals
from tasks.review.majority import resolve
from tasks.review.sync import adopt_unrecorded, checked_project, ensure_ours, project_key
from tasks.review.tasks import task_data, texts_digest
from warehouse.reviews import ReviewStore
from warehouse.store import Warehouse

SHOWN_REJECTS = 50  # rejected annotations named one by one in a summary (all are counted)
SHOWN_FOREIGN = 20  # foreign task ids named in a summary


@dataclass
class ProjectRead:
    """One project as Label Studio showed it."""

    project: Project
    tasks: list[Any]  # Label Studio's tasks with their annotations, once each
    deleted: set[int] = field(default_factory=set)  # recorded task ids Label Studio has no more (in this project)


@dataclass
class PullRead:
    """Everything a pull read of one Label Studio server, before it opens the warehouse to write."""

    url: str
    server_id: str
    annotators: dict[int, str]
    projects: list[ProjectRead]


# -- reading (network only) -------------------------------------------------------------------------
def projects_to_pull(ls: LabelStudio, known: list[dict[str, Any]], title: str | None) -> list[Project]:
    """The project titled `title`, or every project this warehouse pushed to on this server (`known`:
    `ReviewStore.review_projects_on`); each checked."""
    if title is not None:
        return [checked_project(ls, title, must_exist=True)]
    if not known:
        raise NotFoundError(f"this warehouse has pushed no pairs to Label Studio at {ls.url}: name a project with "
                            "--project, or push first")
    projects = []
    for ls_project_id in dict.fromkeys(row["ls_project_id"] for row in known):
        try:
            project = ls.project(int(ls_project_id))
        except LabelStudioError as err:
            if err.status != 404:
                raise
            title_was = next(row["title"] for row in known if row["ls_project_id"] == ls_project_id)
            raise NotFoundError(f"project {title_was!r} (id {ls_project_id}) is gone from Label Studio at {ls.url}; "
                                "pull the others with --project TITLE") from None
        ensure_ours(ls, project)
        projects.append(project)
    return projects


def read_pull(ls: LabelStudio, projects: list[Project], known: list[dict[str, Any]]) -> PullRead:
    """Read every task and annotation of `projects`, and ask after each recorded task that is not listed (a
    task deleted since, or one a page missed while the project changed): gone, or there after all."""
    recorded: dict[int, set[int]] = {}
    for row in known:
        recorded.setdefault(int(row["ls_project_id"]), set()).update(row["task_ids"])
    out = []
    for project in projects:
        tasks = once_each(ls.tasks(project.id), record_id)  # a task a page repeated while the project changed
        listed = {record_id(t) for t in tasks}
        deleted = set()
        for missing in sorted(recorded.get(project.id, set()) - listed):
            task = ls.task(missing)
            if task is None or task.get("project") != project.id:
                deleted.add(missing)
            else:
                tasks.append(task)
        out.append(ProjectRead(project, tasks, deleted))
    return PullRead(ls.url, ls.server_id(), ls.users(), out)


# -- landing (the warehouse open for the write) -----------------------------------------------------
def _recorded_tasks(store: ReviewStore, key: str) -> dict[int, dict[str, Any]]:
    """Task id -> the recorded task, each with its digest (a task recorded before digests were gets it now,
    from its pair's texts)."""
    recorded = {t["ls_task_id"]: t for t in store.review_tasks_of(key) if t["ls_task_id"] is not None}
    undigested = [t for t in recorded.values() if t["texts_digest"] is None]
    if undigested:
        texts = {p["pair_id"]: p for p in store.review_pair_texts([t["pair_id"] for t in undigested])}
        filled = {t["ls_task_id"]: texts_digest(task_data(texts[t["pair_id"]], t["answer_1"]))
                  for t in undigested if t["pair_id"] in texts}
        store.record_task_digests(key, filled)
        for tid, digest in filled.items():
            recorded[tid]["texts_digest"] = digest
    return recorded


def once_each(items: Any, key: Any) -> list[Any]:
    """`items` in order, each key once (the first); items without a key (None) all kept."""
    seen, out = set(), []
    for item in items:
        k = key(item)
        if k is None or k not in seen:
            seen.add(k)
            out.append(item)
    return out


def _checked(store: ReviewStore, key: str, recorded: dict[int, dict[str, Any]],
             ours: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the tasks that show the texts they were pushed with, the annotations of the others, rejected); a task
    found edited is marked so for good."""
    trusted, rejected, edited = [], [], []
    for task in ours:
        pushed = recorded[task["id"]]
        if pushed["texts_changed_at"] is None and texts_digest(task.get("data")) == pushed["texts_digest"]:
            trusted.append(task)
            continue
        if pushed["texts_changed_at"] is None and pushed["texts_digest"] is not None:
            edited.append(task["id"])
        rejected += [{"annotation_id": record_id(a), "ls_task_id": task["id"],
                      "reason": ReviewReject.TASK_TEXTS_CHANGED, "detail": "the task does not show the texts pushed"}
                     for a in annotations_of(task)]
    store.mark_texts_changed(key, edited)
    return trusted, rejected


def land_project(store: ReviewStore, read: PullRead, pr: ProjectRead) -> tuple[Changes, dict[str, Any]]:
    """(its changes, its summary) from what Label Studio showed of a project."""
    project = pr.project
    key = store.review_project_key(read.server_id, read.url, project.id) or project_key(read.server_id, project.id)
    store.save_review_project(key, read.url, project.id, project.title, INTERFACE, read.server_id)
    adopted, foreign = adopt_unrecorded(store, key, pr.tasks)
    recorded = _recorded_tasks(store, key)
    ours = [t for t in pr.tasks if record_id(t) in recorded]
    trusted, rejected = _checked(store, key, recorded, ours)
    mapping = {tid: (t["pair_id"], t["answer_1"]) for tid, t in recorded.items()}
    rows, bad = review_rows(key, read.server_id, trusted, mapping, read.annotators)
    rejected += bad
    rows = once_each(rows, lambda r: r["annotation_id"])
    valid = {r["annotation_id"] for r in rows}
    listed = {task["id"]: {record_id(a) for a in annotations_of(task)} for task in ours}
    deleted = pr.deleted & set(recorded)
    known = store.human_reviews_of(key)
    change = changes(rows, known, withdrawals(known, listed, deleted, {
        r["annotation_id"]: r["reason"] for r in rejected if r["annotation_id"] not in valid | {None}}))
    reasons = Counter(str(r["reason"]) for r in rejected)
    foreign_annotations = sum(len(annotations_of(t)) for t in foreign)
    if foreign_annotations:
        reasons[str(ReviewReject.TASK_NOT_PUSHED)] += foreign_annotations
    return change, {
        "project": project.title, "project_id": project.id, "tasks": len(pr.tasks), "annotations": len(rows),
        "new": len(change.new), "updated": change.updated, "unchanged": change.unchanged,
        "reinstated": change.reinstated, "withdrawn": dict(sorted(change.withdrawn.items())),
        "rejected": dict(sorted(reasons.items())),
        "rejected_annotations": [{**r, "reason": str(r["reason"])} for r in rejected[:SHOWN_REJECTS]],
        "counted_as_poster": sum(r["claimed_annotator_id"] not in (None, r["annotator_id"]) for r in rows),
        "tasks_adopted": adopted, "tasks_deleted": len(deleted), "tasks_texts_changed": len(ours) - len(trusted),
        "foreign_tasks": len(foreign), "foreign_task_ids": [record_id(t) for t in foreign[:SHOWN_FOREIGN]],
    }


def land_pull(wh: Warehouse, read: PullRead) -> ReviewPullSummary:
    """Land what a pull read: every project's new, changed and withdrawn reviews, and every reviewed pair's
    outcome again, in one transaction; the summary (`curate review pull --json`)."""
    per_project, new, changed = [], [], []
    for pr in read.projects:
        change, summary = land_project(wh.reviews, read, pr)
        new += change.new
        changed += change.changed
        per_project.append(summary)
    if new or changed:
        wh.reviews.land_reviews(new, changed, resolve)
    outcomes = wh.reviews.review_outcomes().column("outcome").to_pylist()
    ids = {pr.project.id for pr in read.projects}

    def total(name: str) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for p in per_project:
            counts.update(p[name])
        return dict(sorted(counts.items()))

    return {"url": read.url, "server_id": read.server_id, "projects": per_project, "new": len(new),
            **{k: sum(p[k] for p in per_project) for k in ("updated", "unchanged", "reinstated")},
            "withdrawn": total("withdrawn"), "rejected": total("rejected"),
            **{k: sum(p[k] for p in per_project) for k in ("tasks_adopted", "tasks_deleted", "tasks_texts_changed",
                                                          "foreign_tasks", "counted_as_poster")},
            "pairs_reviewed": len(outcomes),
            "outcomes": {o: outcomes.count(o) for o in ("a", "b", "tie", "both_bad", "split")},
            "progress": [r for r in wh.reviews.review_progress()
                         if r["server_id"] == read.server_id and r["ls_project_id"] in ids]}
