"""Pushing pairs to Label Studio and pulling annotations back: the client and the warehouse together.

Everything that can be refused is refused before anything is written: the server, the token, a project whose
labeling interface is not ours, a version that does not exist. A push plans its tasks in the warehouse (with
their side mapping) before asking Label Studio for them and records each task's id once Label Studio has it,
so a push cut short is finished by the next one and never duplicated: tasks Label Studio holds that the
warehouse has not recorded are recognised by their pair id and texts. A pull reads every annotation first and
lands what is new or changed in one transaction; a pull that finds nothing new writes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from common.errors import InvalidInputError, NotFoundError
from tasks.review.interface import DESCRIPTION, INTERFACE, LABEL_CONFIG, is_ours
from tasks.review.label_studio import IMPORT_BATCH, LabelStudio, LabelStudioError, Project
from tasks.review.labels import changes, review_rows
from tasks.review.majority import resolve
from tasks.review.select import DEFAULT_SEED, SELECTIONS, Candidates, pick
from tasks.review.tasks import answer_1_from_texts, draw_answer_1, task_data
from warehouse.reviews import ReviewStore
from warehouse.versions import VersionStore
from warehouse.store import Warehouse


class InterfaceChangedError(LabelStudioError):
    hint = "restore the project's labeling interface, or review in a new project (--project TITLE)"


def project_key(url: str, project_id: int) -> str:
    return f"{url}#{project_id}"


def default_title(name: str) -> str:
    return f"{name} review"


def check_title(title: str) -> str:
    if not 3 <= len(title) <= 50:  # Label Studio's own bounds for a project title
        raise InvalidInputError(f"a Label Studio project title has 3 to 50 characters: {title!r} has {len(title)}")
    return title


def checked_project(ls: LabelStudio, title: str, must_exist: bool) -> Project | None:
    """The project titled `title` (None when there is none and it may be created), its interface checked."""
    project = ls.find_project(check_title(title))
    if project is None:
        if must_exist:
            raise NotFoundError(f"Label Studio at {ls.url} has no project titled {title!r}")
        return None
    ensure_ours(ls, project)
    return project


def ensure_ours(ls: LabelStudio, project: Project) -> None:
    if not is_ours(project.label_config):
        raise InterfaceChangedError(
            f"Label Studio project {project.title!r} (id {project.id}) at {ls.url} has a labeling interface other "
            "than the one curate made it with: its answers cannot be mapped onto pairs safely; nothing was changed")


def preflight(ls: LabelStudio, title: str | None, must_exist: bool) -> None:
    """The checks a command makes before it starts anything: reachable, token accepted, the project ours."""
    ls.whoami()
    if title is not None:
        checked_project(ls, title, must_exist)


# -- push -----------------------------------------------------------------------------------------
def reconcile(store: ReviewStore, ls: LabelStudio, project: Project, key: str,
              tasks: list[dict[str, Any]] | None = None) -> int:
    """Record the tasks Label Studio holds for pairs whose task id the warehouse lacks (a push whose answer was
    lost, or a project this warehouse did not make), their sides read from their texts. Returns how many. Lists
    the project's tasks only when the counts say something is missing (or `tasks` are given)."""
    known = store.review_task_map(key)
    pushed, planned = store.review_task_counts(key)
    if tasks is None:
        if not planned and project.task_number == pushed:
            return 0
        tasks = list(ls.tasks(project.id))
    unknown = [t for t in tasks if t.get("id") not in known and isinstance(t.get("data"), dict)
               and isinstance(t["data"].get("pair_id"), str)]
    if not unknown:
        return 0
    pairs = {p["pair_id"]: p for p in store.review_pair_texts(sorted({t["data"]["pair_id"] for t in unknown}))}
    found = []
    for t in unknown:
        pair = pairs.get(t["data"]["pair_id"])
        side = answer_1_from_texts(t["data"], pair["response_a"], pair["response_b"]) if pair else None
        if side is not None:
            found.append((pair["pair_id"], int(t["id"]), side))
    store.record_pushed_tasks(key, found)
    return len(found)


def push_planned(wh: Warehouse, ls: LabelStudio, project: Project, key: str) -> int:
    """Ask Label Studio for every planned task, a batch at a time, recording each batch's task ids."""
    planned = wh.reviews.planned_review_tasks(key)
    done = 0
    for start in range(0, len(planned), IMPORT_BATCH):
        batch = planned[start:start + IMPORT_BATCH]
        texts = wh.reviews.review_pair_texts([t["pair_id"] for t in batch])
        data = [task_data(p, t["answer_1"]) for p, t in zip(texts, batch)]
        ids = ls.import_tasks(project.id, data)
        if ids is None:  # the server did not say the ids: find the tasks by their pair ids
            reconcile(wh.reviews, ls, project, key, list(ls.tasks(project.id)))
        else:
            wh.reviews.record_pushed_tasks(key, [(t["pair_id"], i, t["answer_1"]) for t, i in zip(batch, ids)])
        done += len(batch)
    return done


def open_project(store: ReviewStore, ls: LabelStudio, title: str, annotators_per_task: int) -> tuple[Project, str, bool]:
    """(the project, its key, whether it was made now): found by title (its interface checked) or made."""
    project = checked_project(ls, title, must_exist=False)
    created = project is None
    if created:
        project = ls.create_project(title, LABEL_CONFIG, DESCRIPTION, annotators_per_task)
        ensure_ours(ls, project)
    key = project_key(ls.url, project.id)
    store.save_review_project(key, ls.url, project.id, project.title, INTERFACE)
    return project, key, created


def plan(store: ReviewStore, key: str, name: str, version: int, selection: str, limit: int,
         seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Take the first `limit` pairs of `selection` from a version and plan the tasks they still need (answer
    sides drawn per task) in the warehouse; returns what was chosen."""
    if selection not in SELECTIONS:
        raise ValueError(f"unknown selection {selection!r}: one of {', '.join(SELECTIONS)}")
    table = store.review_candidates(name, version)
    candidates = Candidates.from_arrow(table)
    state = store.review_state(key)
    picked = pick(candidates, selection, limit, state["tasks"], state["reviewed"], seed)
    ids = candidates.pair_id[picked.index]
    fresh = ids[picked.needs_task].tolist()
    sides = draw_answer_1(len(fresh))
    config = table.column("judge_config_id")[0].as_py() if table.num_rows else ""
    selections = pa.table({
        "pair_id": pa.array(ids.tolist(), pa.string()), "selection": pa.array([selection] * len(ids), pa.string()),
        "name": pa.array([name] * len(ids), pa.string()), "version": pa.array([version] * len(ids), pa.int64()),
        "judge_config_id": pa.array([config] * len(ids), pa.string()),
        "judge_side": pa.array(candidates.judge_side[picked.index].tolist(), pa.string()),
        "judge_margin": pa.array(_nullable(candidates.margin[picked.index]), pa.float64()),
        "p_correct": pa.array(_nullable(candidates.p_correct[picked.index]), pa.float64()),
        "rank": pa.array(list(range(len(ids))), pa.int64()),
        "seed": pa.array([seed if selection == "audit" else None] * len(ids), pa.int64()),
    })
    store.plan_review(key, pa.table({"pair_id": pa.array(fresh, pa.string()), "answer_1": pa.array(sides, pa.string())}),
                   selections, {"name": name, "version": version, "selection": selection, "limit": limit,
                                "seed": seed if selection == "audit" else None, "selected": len(ids),
                                "new_tasks": len(fresh)})
    members = state.get(f"selected:{selection}", set())
    return {"candidates": len(candidates), "selected": len(ids),
            "new_members": len(set(ids.tolist()) - members), "new_tasks": len(fresh),
            "already_in_project": picked.in_project, "already_reviewed": picked.reviewed,
            "answer_1_is_a": sides.count("a"), "answer_1_is_b": sides.count("b")}


def _nullable(values: np.ndarray) -> list[float | None]:
    return [None if np.isnan(v) else round(float(v), 6) for v in values]


def version_of(store: VersionStore, name: str, version: int | None) -> int:
    meta = store.version_meta(name, version)
    if meta is None:
        raise NotFoundError(f"{name} has no version {version}" if version is not None else f"no version of {name} yet")
    return int(meta["version"])


# -- pull -----------------------------------------------------------------------------------------
def projects_to_pull(store: ReviewStore, ls: LabelStudio, title: str | None) -> list[Project]:
    """The project titled `title`, or every project this warehouse pushed to on this server; each checked."""
    if title is not None:
        return [checked_project(ls, title, must_exist=True)]
    known = store.review_projects_at(ls.url)
    if not known:
        raise NotFoundError(f"this warehouse has pushed no pairs to Label Studio at {ls.url}: name a project with "
                            "--project, or push first")
    projects = []
    for row in known:
        try:
            project = ls.project(int(row["ls_project_id"]))
        except LabelStudioError as err:
            if err.status != 404:
                raise
            raise NotFoundError(f"project {row['title']!r} (id {row['ls_project_id']}) is gone from Label Studio "
                                f"at {ls.url}; pull the others with --project TITLE") from None
        ensure_ours(ls, project)
        projects.append(project)
    return projects


def pull(wh: Warehouse, ls: LabelStudio, projects: list[Project]) -> dict[str, Any]:
    """Land every submitted annotation of `projects`: new ones, and changed ones (their earlier state kept as
    history), in one transaction, with every reviewed pair's outcome resolved again."""
    annotators = ls.users()
    per_project, all_new, all_changed = [], [], []
    for project in projects:
        key = project_key(ls.url, project.id)
        wh.reviews.save_review_project(key, ls.url, project.id, project.title, INTERFACE)
        tasks = list(ls.tasks(project.id))
        adopted = reconcile(wh.reviews, ls, project, key, tasks)
        rows, passed = review_rows(key, ls.url, tasks, wh.reviews.review_task_map(key), annotators)
        new, changed, same = changes(rows, wh.reviews.human_reviews_of(key))
        all_new += new
        all_changed += changed
        per_project.append({"project": project.title, "project_id": project.id, "tasks": len(tasks),
                            "annotations": len(rows), "new": len(new), "updated": len(changed), "unchanged": same,
                            "tasks_adopted": adopted, **passed})
    if all_new or all_changed:
        wh.reviews.land_reviews(all_new, all_changed, resolve)
    outcomes = wh.reviews.review_outcomes().column("outcome").to_pylist()
    return {"url": ls.url, "projects": per_project, "new": len(all_new), "updated": len(all_changed),
            "unchanged": sum(p["unchanged"] for p in per_project), "pairs_reviewed": len(outcomes),
            "outcomes": {o: outcomes.count(o) for o in ("a", "b", "tie", "both_bad", "split")},
            "progress": [r for r in wh.reviews.review_progress() if r["url"] == ls.url
                         and r["ls_project_id"] in {p.id for p in projects}]}
