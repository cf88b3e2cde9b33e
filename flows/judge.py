"""Judge: the GenRM's verdicts for the pairs that go on to curation, written as they complete.

Reads like the process: decide the configuration and the shard, see what the cache already answers,
bring up a server if this worker runs its own, judge, leave a summary. A rerun sends only what is
missing; failed judgments are asked again until `judge_max_attempts`.
"""

from __future__ import annotations

import time

from datetime import datetime, timezone
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from common.settings import Settings, settings_with
from flows.runs import current_run_id
from schemas.summaries import JudgeSummary
from tasks.judge.config import JudgeConfig
from tasks.judge.endpoints import EndpointCheckError
from tasks.judge.exchange import (
    Exchange,
    Heartbeat,
    ResultWriter,
    fold_results,
    plan_secret_key,
    read_work,
    results_dir,
)
from tasks.judge.run import run_judging, split_pending
from tasks.judge.strategies import Strategy
from tasks.judge.targets import checked_targets, judge_config_from, judge_targets
from tasks.judge.warehouse_run import JudgeWork, judge_and_record, plan_work
from warehouse.store import Warehouse

JUDGE_SUMMARY_KEYS = ("pairs", "judged", "failed", "skipped_cached", "requests", "tokens_in", "tokens_out", "seconds")


@task(cache_policy=NO_CACHE)
def plan_judging(wh: Warehouse, config_id: str, strategy: Strategy, shard: str | None, limit: int | None,
                 max_attempts: int) -> JudgeWork:
    """The curation pairs of this shard and what the cache already answers (texts are read later, only for
    pairs with work left)."""
    return plan_work(wh, config_id, strategy, shard, limit, max_attempts)


@task(cache_policy=NO_CACHE)
def judge_shard(wh: Warehouse, work: JudgeWork, targets: list[str], config: JudgeConfig, strategy: Strategy,
                settings: Settings, run_id: str, shard: str | None) -> JudgeSummary:
    return judge_and_record(wh, work, targets, config, strategy, settings, run_id, shard)


@flow(name="judge", log_prints=False)
def judge(
    endpoints: list[str] | None = None,
    strategy: str | None = None,
    shard: str | None = None,
    limit: int | None = None,
    launch: str | None = None,
    port: int | None = None,
    max_in_flight: int | None = None,
    request_timeout: float | None = None,
    warehouse: str | None = None,
) -> JudgeSummary:
    """Judge the pending pairs (of one shard "i/n") on the given endpoints, or on a server launched here."""
    log = get_run_logger()
    settings = settings_with(warehouse=warehouse, judge_max_in_flight=max_in_flight,
                             judge_request_timeout=request_timeout)
    config = judge_config_from(settings)
    plan = Strategy.parse(strategy or settings.judge_strategy, settings.judge_adaptive_margin)
    server, targets = judge_targets(endpoints, launch, port, settings, config)
    run_id = current_run_id()
    with server:
        began = time.perf_counter()
        targets, config = checked_targets(targets, config, settings, get_run_logger())
        preflight_seconds = round(time.perf_counter() - began, 3)
        with Warehouse(settings.warehouse) as wh:
            # quote(): Prefect would otherwise walk every state of a large cache looking for futures.
            work = plan_judging(wh, config.id, plan, shard, limit, settings.judge_max_attempts)
            summary = judge_shard(wh, quote(work), targets, config, plan, settings, run_id, shard)
    summary["preflight_seconds"] = preflight_seconds
    log.info("judge: %d pairs, %d judged, %d failed, %d cached, %d requests in %.1fs", summary["pairs"],
             summary["judged"], sum(summary["failed"].values()), summary["skipped_cached"], summary["requests"],
             summary["seconds"])
    rows = [{"measure": k, "value": str(summary[k])} for k in JUDGE_SUMMARY_KEYS + ("judgments_per_second", "strategy")]
    create_table_artifact(key="judge-summary", table=rows, description=f"Judge run {run_id} ({config.id})")
    return summary


@flow(name="judge-worker", log_prints=False)
def judge_worker(
    work: str,
    endpoints: list[str] | None = None,
    launch: str | None = None,
    port: int | None = None,
    max_in_flight: int | None = None,
    request_timeout: float | None = None,
) -> dict[str, Any]:
    """Judge one shard's work file on a GPU worker, writing judgments to the exchange folder (never to the
    warehouse). Endpoints come from the parameters or the worker's CURATE_JUDGE_ENDPOINTS /
    CURATE_JUDGE_LAUNCH. A rerun of the same shard skips what an earlier attempt already wrote."""
    log = get_run_logger()
    settings = settings_with(judge_max_in_flight=max_in_flight, judge_request_timeout=request_timeout)
    ex, work_file = Exchange.of_work(work)
    shard = read_work(ex, work_file)
    config = JudgeConfig(**shard.config)
    plan = Strategy.parse(shard.strategy, settings.judge_adaptive_margin)
    out = results_dir(ex, shard.plan_id, shard.label)
    folded = fold_results(shard.states, ex, out)
    ids = [p[0] for p in shard.pairs]
    pending, done = split_pending(ids, plan, shard.states, settings.judge_max_attempts)
    keep = set(pending)
    pairs = [p for p in shard.pairs if p[0] in keep]
    server, targets = judge_targets(endpoints, launch, port, settings, config)
    run_id = current_run_id()
    writer = ResultWriter(ex, out, run_id, plan_secret_key(shard.plan_id))
    record = {"run_id": run_id, "judge_config_id": config.id, "strategy": plan.label, "endpoints": targets,
              "shard": shard.shard, "started_at": datetime.now(timezone.utc).replace(tzinfo=None), "status": "running"}
    writer.record(record)
    log.info("shard %s of plan %s: %d pairs, %d with work left (%d earlier result files read)", shard.shard,
             shard.plan_id, len(ids), len(pending), folded)
    try:
        with Heartbeat(ex, out, run_id), server:
            targets, served_config = checked_targets(targets, config, settings, get_run_logger())
            if served_config.simulated != config.simulated:
                raise EndpointCheckError(
                    f"this worker's endpoints serve {'the SIMULATED stand-in' if served_config.simulated else 'a real judge'}"
                    f" but the plan is for {'simulated' if config.simulated else 'real'} verdicts ({config.id})",
                    hint="point the worker at the judge the plan names (CURATE_JUDGE_SIMULATED on the orchestrator)")
            if config.template and served_config.template != config.template:
                raise EndpointCheckError(
                    f"this worker's endpoints render the probe pair as {served_config.template or 'unknown'}, but the "
                    f"plan pins the chat template {config.template} ({config.id})",
                    hint="serve the chat template the plan names (CURATE_JUDGE_TEMPLATE on the orchestrator)")
            record["template"] = served_config.template
            summary = run_judging(pairs, shard.states, done, targets, config, plan, settings, writer.write, run_id)
    except BaseException as err:
        writer.record({**record, "status": "failed", "finished_at": datetime.now(timezone.utc).replace(tzinfo=None),
                       "error": f"{type(err).__name__}: {err}"})
        raise
    summary.update(pairs=len(ids), judge_config_id=config.id, strategy=plan.label, shard=shard.shard,
                   endpoints=targets, run_id=run_id, result_files=writer.seq)
    writer.record({**record, "status": "completed", "finished_at": datetime.now(timezone.utc).replace(tzinfo=None),
                   "summary": summary})
    log.info("shard %s: %d judged, %d failed, %d cached, %d requests in %.1fs", shard.shard, summary["judged"],
             sum(summary["failed"].values()), summary["skipped_cached"], summary["requests"], summary["seconds"])
    return summary
