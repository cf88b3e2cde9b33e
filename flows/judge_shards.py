"""Sharded judging: the pending pairs split across GPU workers, their judgments merged here.

Reads like the process: merge what workers left behind, plan the pending judgments, write one work file
per shard, run the judge deployment once per shard on the `gpu` pool, merge each shard's results as it
finishes, and say plainly which shards did not finish. Workers never open the warehouse; only this flow
writes to it, and only while it is not waiting on them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.states import Crashed

from common.errors import InvalidInputError, UserError
from common.settings import settings_with
from flows.runs import current_run_id
from schemas.summaries import MergeSummary, ShardedJudgeSummary
from tasks.judge.config import config_record
from tasks.judge.context import JudgeRun
from tasks.judge.cost import cost_model, cost_report
from tasks.judge.exchange import (
    Exchange,
    HeartbeatWatch,
    results_dir,
    shard_label,
    shared_secret,
    work_path,
    write_work,
)
from tasks.judge.exchange import plan_id as make_plan_id
from tasks.judge.exchange_checks import KEY_ENV
from tasks.judge.merge import merge_exchange_into, nothing_merged
from tasks.judge.shards import pair_bucket
from tasks.judge.targets import judge_config_from
from tasks.judge.warehouse_run import work_of
from warehouse.store import Warehouse

FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


class ShardsIncompleteError(UserError, RuntimeError):
    """Some shards did not finish; what they wrote is merged, and a rerun judges only the rest."""


class NothingMergedError(UserError, RuntimeError):
    """The workers wrote judgments and none could be merged: a night's requests paid for nothing."""

    hint = (f"each file's reason lies beside it under <exchange>/quarantine/; keys that differ, or one on one side "
            f"only: set the same {KEY_ENV} on the orchestrator and every GPU worker")


@dataclass
class ShardRun:
    index: int
    count: int
    flow_run_id: str
    state: str = "SCHEDULED"
    message: str = ""
    started: float | None = None  # when this flow first saw it running

    @property
    def shard(self) -> str:
        return f"{self.index}/{self.count}"


@task(cache_policy=NO_CACHE)
def merge_exchange(warehouse: str, exchange: str) -> MergeSummary:
    """Merge every worker batch file not merged yet, and the workers' run records, checked against their plans
    (what fails is rejected or moved aside, and reported). Idempotent: a file is merged once (by its path)."""
    with Warehouse(warehouse) as wh:
        return merge_exchange_into(wh, Exchange(exchange)).as_dict()


@task(cache_policy=NO_CACHE)
def plan_shards(warehouse: str, exchange: str, shards: int, strategy: str | None, limit: int | None) -> dict[str, Any]:
    """Write one work file per non-empty shard of the pending pairs; returns the plan."""
    settings = settings_with(warehouse=warehouse)
    # the orchestrator's run: it plans for the workers and judges nothing itself (no endpoints)
    run = JudgeRun.of(settings, config=judge_config_from(settings), run_id=current_run_id(), strategy=strategy,
                      limit=limit)
    config, plan = run.config, run.strategy
    ex = Exchange(exchange)
    with Warehouse(warehouse) as wh:
        wh.judging.register_judge_config(config_record(config))
        work = work_of(wh, run)
        pending, states = work.pending, work.states
        pid = make_plan_id(config.id, plan.label, pending)
        files = {}
        for index in range(shards):
            mine = [p for p in pending if pair_bucket(p, shards) == index]
            if not mine:
                continue
            keep = set(mine)
            path = work_path(ex, pid, index, shards)
            write_work(ex, path, plan=pid, shard=f"{index}/{shards}", strategy=plan.label,
                       config=asdict(config), pairs=wh.judging.pair_texts(mine),
                       states={k: v for k, v in states.items() if k[0] in keep}, secret=shared_secret())
            files[index] = ex.url_of(path)
    return {"plan_id": pid, "judge_config_id": config.id, "strategy": plan.label, "pairs": len(work.ids),
            "pending": len(pending), "skipped_cached": work.done.skipped_cached,
            "skipped_exhausted": work.done.exhausted, "work": files}


def _watch(runs: list[ShardRun], ex: Exchange, plan: str, poll: float, stale: float, start_timeout: float) -> None:
    """Wait until every shard run is final; a running shard whose heartbeat stops is marked crashed, one
    no worker picks up in `start_timeout` is cancelled."""
    log = get_run_logger()
    waiting_since = time.time()
    beats = HeartbeatWatch(ex)
    with get_client(sync_client=True) as client:
        while True:
            open_runs = [r for r in runs if r.state not in FINAL]
            if not open_runs:
                return
            for r in open_runs:
                fr = client.read_flow_run(r.flow_run_id)
                r.state, r.message = fr.state_type.value, (fr.state.message or "") if fr.state else ""
                now = time.time()
                if r.state == "RUNNING":
                    r.started = r.started or now
                    beat = beats.last_change(results_dir(ex, plan, shard_label(r.index, r.count)), now)
                    last = beat if beat is not None and beat >= r.started - stale else r.started
                    if now - last > stale:
                        r.message = (f"no heartbeat from the worker for {now - last:.0f} s (limit {stale:.0f} s): "
                                     "the worker or its host is gone")
                        client.set_flow_run_state(r.flow_run_id, Crashed(message=r.message), force=True)
                        r.state = "CRASHED"
                        log.error("shard %s (flow run %s): %s", r.shard, r.flow_run_id, r.message)
                elif r.state in ("SCHEDULED", "PENDING") and now - waiting_since > start_timeout:
                    r.message = (f"no worker of the gpu pool started it in {start_timeout:.0f} s: "
                                 "start one with `prefect worker start --pool gpu`")
                    client.set_flow_run_state(r.flow_run_id, Crashed(message=r.message), force=True)
                    r.state = "CRASHED"
                    log.error("shard %s (flow run %s): %s", r.shard, r.flow_run_id, r.message)
            if any(r.state not in FINAL for r in runs):
                time.sleep(poll)


def _require_deployment(name: str) -> None:
    """Refuse before planning when the shard deployment is not on this Prefect API."""
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import PREFECT_API_URL

    with get_client(sync_client=True) as client:
        try:
            client.read_deployment_by_name(name)
        except ObjectNotFound:
            raise InvalidInputError(
                f"no deployment {name!r} on the Prefect API ({PREFECT_API_URL.value() or 'ephemeral'}): sharded "
                "judging needs a Prefect server with the deployments (`prefect --no-prompt deploy --all`) and "
                "workers on the gpu pool; without them, judge in process (no --shards)") from None


@flow(name="judge-sharded", log_prints=False)
def judge_sharded(
    shards: int,
    *, strategy: str | None = None,
    deployment: str | None = None,
    exchange: str | None = None,
    warehouse: str | None = None,
    limit: int | None = None,
    stale_seconds: float | None = None,
    start_timeout: float = 3600.0,
) -> ShardedJudgeSummary:
    """Judge the pending pairs in `shards` shards, one run of the judge deployment per shard."""
    log = get_run_logger()
    if shards < 1:
        raise InvalidInputError(f"shards must be >= 1, not {shards}")
    settings = settings_with(warehouse=warehouse, judge_exchange=exchange, judge_deployment=deployment,
                             judge_shard_stale_seconds=stale_seconds)
    ex = Exchange(settings.judge_exchange)
    root = ex.url
    wh_path = str(settings.warehouse)
    _require_deployment(settings.judge_deployment)
    before = merge_exchange(wh_path, str(root))  # a lost worker's finished part counts before planning
    plan = plan_shards(wh_path, str(root), shards, strategy, limit)
    summary: ShardedJudgeSummary = {**{k: v for k, v in plan.items() if k != "work"}, "merged_before": before,
                                    "shards": []}
    if not plan["work"]:
        log.info("judge: nothing pending (%d pairs, %d judgments cached)", plan["pairs"], plan["skipped_cached"])
        summary.update(judged=0, failed={}, requests=0, tokens_in=0, tokens_out=0, seconds=0.0, merged={})
        return summary
    runs = []
    for index, work in sorted(plan["work"].items()):
        fr = run_deployment(settings.judge_deployment, parameters={"work": work}, timeout=0,
                            flow_run_name=f"judge {plan['plan_id']} {index}/{shards}")
        runs.append(ShardRun(index, shards, str(fr.id)))
        log.info("shard %d/%d -> flow run %s", index, shards, fr.id)
    started = time.perf_counter()
    _watch(runs, ex, plan["plan_id"], settings.judge_shard_poll_seconds, settings.judge_shard_stale_seconds,
           start_timeout)
    summary["merged"] = merge_exchange(wh_path, str(root))
    lost = [r.flow_run_id for r in runs if r.state != "COMPLETED"]
    if lost:
        with Warehouse(wh_path) as wh:
            for run_id in lost:
                wh.runs.mark_judge_run(run_id, "lost", "the shard's flow run did not complete; see the pipeline run")
    summary["seconds"] = round(time.perf_counter() - started, 3)
    summary.update(_totals(runs, wh_path))
    summary["cost"] = cost_report(requests=summary["requests"], tokens_in=summary["tokens_in"],
                                  tokens_out=summary["tokens_out"], judge_seconds=summary["seconds"], kept=None,
                                  model=cost_model(settings))
    summary["shards"] = [{"shard": r.shard, "flow_run_id": r.flow_run_id, "state": r.state, "message": r.message}
                         for r in runs]
    create_table_artifact(key="judge-shards", table=summary["shards"],
                          description=f"Judge shards of plan {plan['plan_id']}")
    problem = nothing_merged(summary["merged"])
    if problem is not None:
        raise NothingMergedError(problem)
    failed = [r for r in runs if r.state != "COMPLETED"]
    if failed:
        why: dict[str, list[str]] = {}  # shards that failed alike are named together
        for r in failed:
            why.setdefault(f"{r.state.lower()}: {r.message or 'see flow run ' + r.flow_run_id}", []).append(r.shard)
        raise ShardsIncompleteError(
            f"{len(failed)} of {len(runs)} judge shards did not finish ("
            + "; ".join(f"{', '.join(shards)} {message}" for message, shards in why.items())
            + f"). Their finished judgments are merged ({summary['merged']['rows']} rows); rerun to judge the rest.")
    return summary


def _totals(runs: list[ShardRun], warehouse: str) -> dict[str, Any]:
    """Judged, failed, requests and tokens over the worker runs of this plan, from their records as merged into
    judge_runs (checked, and one per run however often a record was copied)."""
    ids = sorted({r.flow_run_id for r in runs})
    totals: dict[str, Any] = {"judged": 0, "failed": {}, "requests": 0, "tokens_in": 0, "tokens_out": 0}
    with Warehouse(warehouse, read_only=True) as wh:
        summaries = wh.runs.judge_run_summaries(ids)
        totals["served_models"] = sorted({m for rid in ids for m in wh.judging.served_models(rid)})
    for s in summaries.values():
        for k in ("judged", "requests", "tokens_in", "tokens_out"):
            totals[k] += s.get(k, 0)
        for reason, n in (s.get("failed") or {}).items():
            totals["failed"][reason] = totals["failed"].get(reason, 0) + n
    return totals
