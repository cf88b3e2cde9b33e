"""Human review in Label Studio: push the pairs the judge is least sure of (or a disagreement set, or a seeded
audit sample) to reviewers, pull their annotations back, and, on a schedule, both.

Reads like the process: reach Label Studio with the token (from the environment or a Prefect Secret block,
never a parameter: parameters are stored), find or make the project, choose the pairs, plan their tasks in the
warehouse, create them in Label Studio; later, read every annotation (the warehouse closed meanwhile: a slow
server holds no other command back), then open the warehouse for the write alone and land what checks out.
"""

from __future__ import annotations

import os
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from common.errors import InvalidInputError
from common.settings import settings_with
from flows.runs import snapshot_dashboard
from schemas.summaries import ReviewChoice, ReviewPullSummary, ReviewPushSummary, ReviewSyncSummary
from tasks.review.context import ReviewPushRun, ReviewSyncRun
from tasks.review.label_studio import LabelStudio, resolve_token
from tasks.review.pull import PullRead, land_pull, projects_to_pull, read_pull
from tasks.review.select import DEFAULT_SEED, Candidates
from tasks.review.sync import default_title, open_project, plan, push_planned, reconcile, version_candidates, version_of
from warehouse.store import Warehouse

URL_ENV = "CURATE_LABEL_STUDIO_URL"  # where the scheduled deployment finds Label Studio


def _url(url: str | None) -> str:
    url = url or os.environ.get(URL_ENV)
    if not url:
        raise InvalidInputError(f"no Label Studio URL: pass one, or set {URL_ENV} on the worker")
    return url


@task(cache_policy=NO_CACHE)
def choose_and_plan(wh: Warehouse, key: str, name: str, version: int, selection: str, limit: int,
                    seed: int, candidates: Candidates, config: str) -> ReviewChoice:
    return plan(wh.reviews, key, name, version, selection, limit, candidates, config, seed)


@task(cache_policy=NO_CACHE)
def finish_earlier_push(wh: Warehouse, ls: LabelStudio, project: Any, key: str) -> dict[str, int]:
    """What a push cut short left: tasks Label Studio holds but the warehouse did not record, then tasks planned
    but never created."""
    adopted, foreign = reconcile(wh.reviews, ls, project, key)
    return {"tasks_adopted": adopted, "foreign_tasks": foreign, "tasks_pushed": push_planned(wh, ls, project, key)}


@task(cache_policy=NO_CACHE)
def create_tasks(wh: Warehouse, ls: LabelStudio, project: Any, key: str) -> int:
    return push_planned(wh, ls, project, key)


@task(cache_policy=NO_CACHE)
def read_annotations(ls: LabelStudio, known: list[dict[str, Any]], project: str | None) -> PullRead:
    return read_pull(ls, projects_to_pull(ls, known, project), known)


@task(cache_policy=NO_CACHE)
def land_annotations(wh: Warehouse, read: PullRead) -> ReviewPullSummary:
    return land_pull(wh, read)


def _pull(warehouse: Any, ls: LabelStudio, project: str | None, known: list[dict[str, Any]]) -> ReviewPullSummary:
    """Read Label Studio with the warehouse closed, then open it for the write alone."""
    read = read_annotations(ls, known, project)
    with Warehouse(warehouse) as wh:
        return land_annotations(wh, quote(read))  # quote(): Prefect would otherwise walk every task read


def _known(warehouse: Any, ls: LabelStudio) -> list[dict[str, Any]]:
    """What the warehouse knows of that server's projects (open for a moment: it may migrate)."""
    server = ls.server_id()
    with Warehouse(warehouse) as wh:
        return wh.reviews.review_projects_on(server, ls.url)


def _push(wh: Warehouse, ls: LabelStudio, name: str, version: int | None, project: str | None, selection: str,
          limit: int, seed: int, annotators_per_task: int, sources: list[str] | None = None) -> ReviewPushSummary:
    version = version_of(wh.versions, name, version)
    candidates, config = version_candidates(wh, name, version, selection, sources)  # refused before anything is written
    title = project or default_title(name)
    ls.whoami()
    target, key, created = open_project(wh.reviews, ls, title, annotators_per_task)
    leftover = finish_earlier_push(wh, ls, target, key)
    chosen = choose_and_plan(wh, key, name, version, selection, limit, seed, quote(candidates), config)
    pushed = create_tasks(wh, ls, target, key)
    tasks, planned = wh.reviews.review_task_counts(key)
    return {"url": ls.url, "project": target.title, "project_id": target.id, "project_created": created,
            "name": name, "version": version, "selection": selection, "limit": limit,
            **({"seed": seed} if selection == "audit" else {}), **chosen,
            "tasks_pushed": leftover["tasks_pushed"] + pushed, "tasks_adopted": leftover["tasks_adopted"],
            "foreign_tasks": leftover["foreign_tasks"],
            "project_tasks": tasks, "not_yet_pushed": planned}


@flow(name="review-push", log_prints=False)
def review_push(name: str, *, version: int | None = None, url: str | None = None, project: str | None = None,
                selection: str = "borderline", limit: int = 100, seed: int = DEFAULT_SEED,
                annotators_per_task: int = 1, warehouse: str | None = None,
                sources: list[str] | None = None) -> ReviewPushSummary:
    """Push up to `limit` pairs of a version to a Label Studio project (made when missing); never a task twice."""
    asked = ReviewPushRun.of(name, version, selection, limit, seed, annotators_per_task, warehouse=warehouse)
    settings = asked.settings
    with LabelStudio(_url(url), resolve_token()) as ls, Warehouse(settings.warehouse) as wh:
        summary = _push(wh, ls, name, version, project, selection, limit, seed, annotators_per_task, sources)
    get_run_logger().info("pushed %d new tasks of %s v%d (%s) to %r", summary["tasks_pushed"], name,
                          summary["version"], selection, summary["project"])
    snapshot_dashboard(str(settings.warehouse), "review")
    return summary


@flow(name="review-pull", log_prints=False)
def review_pull(*, url: str | None = None, project: str | None = None, warehouse: str | None = None) -> ReviewPullSummary:
    """Land every submitted annotation of a project (or of every project this warehouse pushed to there)."""
    settings = settings_with(warehouse=warehouse)
    with LabelStudio(_url(url), resolve_token()) as ls:
        ls.whoami()
        summary = _pull(settings.warehouse, ls, project, _known(settings.warehouse, ls))
    get_run_logger().info("pulled %d new and %d updated annotations", summary["new"], summary["updated"])
    snapshot_dashboard(str(settings.warehouse), "review")
    return summary


@flow(name="review-sync", log_prints=False)
def review_sync(*, datasets: list[str] | None = None, url: str | None = None, limit: int = 100,
                audit_limit: int = 0, warehouse: str | None = None) -> ReviewSyncSummary:
    """On a schedule: pull what reviewers did, then push the borderline pairs (and, when asked, an audit
    sample) of each dataset's newest version that has not been pushed yet, to the project "<dataset> review"."""
    settings = ReviewSyncRun.of(datasets, limit, audit_limit, warehouse=warehouse).settings
    log = get_run_logger()
    out: ReviewSyncSummary = {"pulled": None, "pushed": []}
    with LabelStudio(_url(url), resolve_token()) as ls:
        ls.whoami()
        known = _known(settings.warehouse, ls)
        if known:
            out["pulled"] = _pull(settings.warehouse, ls, None, known)
        with Warehouse(settings.warehouse) as wh:
            names = datasets if datasets is not None else sorted({v["name"] for v in wh.versions.versions()})
            for name in names:
                if wh.versions.version_meta(name) is None:
                    continue  # no version of it yet: the next run looks again
                latest = version_of(wh.versions, name, None)
                if wh.reviews.review_version_pushed(name, latest):
                    continue
                for selection, n in (("borderline", limit), ("audit", audit_limit)):
                    if n > 0:
                        out["pushed"].append(_push(wh, ls, name, latest, None, selection, n, DEFAULT_SEED, 1))
                        log.info("pushed %s pairs of %s v%d", selection, name, latest)
    snapshot_dashboard(str(settings.warehouse), "review")
    return out
