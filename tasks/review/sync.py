"""Pushing pairs to Label Studio: the client and the warehouse together (pulling is `tasks.review.pull`).

Everything that can be refused is refused before anything is written: the server, the token, a project whose
labeling interface is not ours, a version that does not exist. A project is known by the server's identity (what
Label Studio says of itself), not by the URL it was reached at. A push plans its tasks in the warehouse (with
their side mapping) before asking Label Studio for them and records each task's id and the digest of its texts
once Label Studio has it, so a push cut short is finished by the next one and never duplicated: a task Label
Studio holds that the warehouse has not recorded is adopted only when its pair was planned for that project and it
shows exactly the texts planned; any other is someone else's, left alone and counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from common.errors import InvalidInputError, NotFoundError
from schemas.summaries import ReviewChoice
from tasks.curate.policy import make_policy
from tasks.review.calibration import calibrate_with_reviews
from tasks.review.certification import certified_pairs
from tasks.review.interface import DESCRIPTION, INTERFACE, LABEL_CONFIG, is_ours
from tasks.review.label_studio import IMPORT_BATCH, LabelStudio, LabelStudioError, Project
from tasks.review.labels import record_id
from tasks.review.pool import ReviewedPool
from tasks.review.select import DEFAULT_SEED, SELECTIONS, Candidates, NotCertifiedVersion, pick
from tasks.review.tasks import draw_answer_1, sort_unrecorded, task_data, texts_digest
from warehouse.reviews import ReviewStore
from warehouse.store import Warehouse
from warehouse.versions import VersionStore


class InterfaceChangedError(LabelStudioError):
    hint = "restore the project's labeling interface, or review in a new project (--project TITLE)"


def project_key(server_id: str, project_id: int) -> str:
    """The key a new project is recorded by (one recorded before servers had identities keeps `<url>#<id>`)."""
    return f"{server_id}#{project_id}"


def key_of(store: ReviewStore, ls: LabelStudio, project: Project) -> str:
    """The key this warehouse knows the project by, through whichever URL it was reached (or a new one)."""
    server = ls.server_id()
    return store.review_project_key(server, ls.url, project.id) or project_key(server, project.id)


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
    """The checks a command makes before it starts anything: reachable, token accepted, the server saying which
    it is, the project ours."""
    ls.server_id()  # asks whoami first
    if title is not None:
        checked_project(ls, title, must_exist)


# -- push -----------------------------------------------------------------------------------------
def adopt_unrecorded(store: ReviewStore, key: str, listed: list[Any]) -> tuple[int, list[Any]]:
    """Of a project's tasks (as Label Studio lists them), record those a push created but whose ids it did not
    record (its answer lost, or cut short): a task whose pair is planned here and whose texts are exactly those
    planned. Returns (how many were adopted, the foreign tasks: neither recorded nor adopted)."""
    tasks = store.review_tasks_of(key)
    recorded = {t["ls_task_id"] for t in tasks if t["ls_task_id"] is not None}
    planned = {t["pair_id"]: t["answer_1"] for t in tasks if t["ls_task_id"] is None}
    named = {t["data"].get("pair_id") for t in listed if record_id(t) not in recorded and isinstance(t, dict)
             and isinstance(t.get("data"), dict)}
    pairs = store.review_pair_texts(sorted(p for p in named if isinstance(p, str) and p in planned))
    digests = {p["pair_id"]: texts_digest(task_data(p, planned[p["pair_id"]])) for p in pairs}
    adopt, foreign = sort_unrecorded(listed, recorded, digests)
    store.record_pushed_tasks(key, [(pair, tid, digests[pair]) for pair, tid in adopt])
    return len(adopt), foreign


def reconcile(store: ReviewStore, ls: LabelStudio, project: Project, key: str) -> tuple[int, int]:
    """What a push cut short left: (tasks adopted, foreign tasks in the project). Lists the project's tasks only
    when the counts say something may be missing."""
    pushed, planned = store.review_task_counts(key)
    if not planned and project.task_number == pushed:
        return 0, 0
    adopted, foreign = adopt_unrecorded(store, key, list(ls.tasks(project.id)))
    return adopted, len(foreign)


def push_planned(wh: Warehouse, ls: LabelStudio, project: Project, key: str) -> int:
    """Ask Label Studio for every planned task, a batch at a time, recording each batch's task ids and digests."""
    planned = wh.reviews.planned_review_tasks(key)
    done = 0
    for start in range(0, len(planned), IMPORT_BATCH):
        batch = planned[start:start + IMPORT_BATCH]
        texts = wh.reviews.review_pair_texts([t["pair_id"] for t in batch])
        data = [task_data(p, t["answer_1"]) for p, t in zip(texts, batch)]
        ids = ls.import_tasks(project.id, data)
        if ids is None:  # the server did not say the ids: find the tasks by their pair ids and texts
            adopt_unrecorded(wh.reviews, key, list(ls.tasks(project.id)))
        else:
            wh.reviews.record_pushed_tasks(key, [(t["pair_id"], i, texts_digest(d))
                                                 for t, i, d in zip(batch, ids, data)])
        done += len(batch)
    return done


def open_project(store: ReviewStore, ls: LabelStudio, title: str, annotators_per_task: int) -> tuple[Project, str, bool]:
    """(the project, its key, whether it was made now): found by title (its interface checked) or made."""
    project = checked_project(ls, title, must_exist=False)
    created = project is None
    if created:
        project = ls.create_project(title, LABEL_CONFIG, DESCRIPTION, annotators_per_task)
        ensure_ours(ls, project)
    key = key_of(store, ls, project)
    store.save_review_project(key, ls.url, project.id, project.title, INTERFACE, ls.server_id())
    return project, key, created


def version_candidates(wh: Warehouse, name: str, version: int, selection: str,
                       sources: list[str] | None = None) -> tuple[Candidates, str]:
    """The judged pool of a version's judge configuration as selections read it, as it is now (p_correct fitted
    again over it, the reviews so far among its labels; for `uncertified`, the version's certification computed
    again), and that configuration's id; `sources`: draw from these sources' pairs only (a source's own audit is a
    uniform sample of its pairs). `uncertified` of a version without a target: `NotCertifiedVersion`."""
    meta = wh.versions.version_meta(name, version)
    if meta is None:
        raise NotFoundError(f"{name} has no version {version}")
    policy = make_policy(meta["policy"])
    if selection == "uncertified" and policy.target_agreement is None:
        raise NotCertifiedVersion(f"the selection `uncertified` needs a certified version: {name} v{version} was "
                                  "built without target_agreement")
    read = ReviewedPool.read(wh, meta["judge_config_id"])
    p_correct, _ = calibrate_with_reviews(read.pool, read.judge, read.reviews, read.facts)
    spent = ((meta.get("stats") or {}).get("certification") or {}).get("risk_spent")  # the risk its attempt was tested at
    certified = (certified_pairs(read.pool, read.judge, read.reviews, policy, read.facts, spent)
                 if selection == "uncertified" else None)
    among = None
    if sources:
        unknown = sorted(set(sources) - set(read.pool.source.tolist()))
        if unknown:
            raise NotFoundError(f"{name} v{version}'s judged pool has no pair from {', '.join(map(repr, unknown))}")
        among = np.isin(read.pool.source, sources)
    return Candidates.of_pool(read.pool, read.judge, p_correct, certified, among), meta["judge_config_id"]


def plan(store: ReviewStore, key: str, name: str, version: int, selection: str, limit: int,
         candidates: Candidates, config: str, seed: int = DEFAULT_SEED) -> ReviewChoice:
    """Take the first `limit` pairs of `selection` from a version's `candidates` (`version_candidates`: `config`
    is its judge configuration) and plan the tasks they still need (answer sides drawn per task) in the
    warehouse; returns what was chosen."""
    if selection not in SELECTIONS:
        raise ValueError(f"unknown selection {selection!r}: one of {', '.join(SELECTIONS)}")
    state = store.review_state(key)
    picked = pick(candidates, selection, limit, state["tasks"], state["reviewed"], seed)
    ids = candidates.pair_id[picked.index]
    fresh = ids[picked.needs_task].tolist()
    sides = draw_answer_1(len(fresh))
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
