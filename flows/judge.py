"""Judge: the GenRM's verdicts for the pairs that go on to curation, written as they complete.

Reads like the process: decide the configuration and the shard, see what the cache already answers,
bring up a server if this worker runs its own, judge, leave a summary. A rerun sends only what is
missing; failed judgments are asked again until `judge_max_attempts`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from common.errors import InvalidInputError
from common import progress
from common.settings import Settings, settings_with
from flows.runs import current_run_id
from tasks.curate.cost import cost_model, cost_report
from tasks.judge.client import ClientOptions
from tasks.judge.config import JudgeConfig, config_record
from tasks.judge.endpoints import EndpointCheckError, NoEndpointError, check_endpoints
from tasks.judge.exchange import Heartbeat, ResultWriter, fold_results, read_work, results_dir
from tasks.judge.limits import endpoint_limits, slot_gate
from tasks.judge.run import PairText, Plan, States, as_states, judge_pairs, planned_slots, results_table
from tasks.judge.server import ManagedServer, VllmLaunch, require_vllm, standin_command, vllm_command
from tasks.judge.shards import parse_shard, pair_bucket
from tasks.judge.strategies import Strategy
from warehouse.store import Warehouse

JUDGE_SUMMARY_KEYS = ("pairs", "judged", "failed", "skipped_cached", "requests", "tokens_in", "tokens_out", "seconds")


def judge_config_from(settings: Settings, simulated: bool | None = None) -> JudgeConfig:
    return JudgeConfig(model=settings.judge_model, served_revision=settings.judge_served_revision,
                       temperature=settings.judge_temperature, top_p=settings.judge_top_p,
                       max_tokens=settings.judge_max_tokens,
                       simulated=settings.judge_simulated if simulated is None else simulated)


def checked_targets(targets: list[str], config: JudgeConfig, settings: Settings) -> tuple[list[str], JudgeConfig]:
    """The endpoints that answer (refusing when none does, or one serves another model), and the
    configuration marked simulated when they serve the stand-in."""
    report = check_endpoints(targets, config.model, allow_other_model=settings.judge_allow_other_model,
                             timeout=settings.judge_check_timeout)
    log = get_run_logger()
    for p in report.unreachable:
        log.warning("judge endpoint %s does not answer (%s): judging with the others", p.url, p.error)
    if report.simulated:
        log.warning("the judge endpoints serve the SIMULATED stand-in: its verdicts are marked simulated")
    return report.usable, replace(config, simulated=report.simulated)


def _targets(endpoints: list[str] | None, launch: str | None, port: int | None, settings: Settings,
             config: JudgeConfig):
    """(server context, endpoints): the given ones or the settings', plus a server started here."""
    server, launched = _launcher(launch or settings.judge_launch, settings, config, port or settings.vllm_port)
    targets = list(endpoints or settings.judge_endpoints) + ([launched] if launched else [])
    if not targets:
        raise NoEndpointError("no judge endpoint")
    return server, targets


def _launcher(launch: str | None, settings: Settings, config: JudgeConfig, port: int):
    """(server context, endpoint) for a server this worker starts itself."""
    if launch in (None, "", "none"):
        return nullcontext(), None
    base = f"http://127.0.0.1:{port}"
    if launch == "vllm":
        require_vllm()
        argv = vllm_command(VllmLaunch(
            model=config.model, tensor_parallel_size=settings.vllm_tensor_parallel_size,
            data_parallel_size=settings.vllm_data_parallel_size, max_model_len=settings.judge_max_model_len,
            gpu_memory_utilization=settings.vllm_gpu_memory_utilization, port=port,
            max_num_seqs=settings.judge_max_in_flight,
            revision=None if config.served_revision == "main" else config.served_revision,
        ))
        return ManagedServer(argv, base, name="vLLM"), f"{base}/v1"
    if launch == "standin":
        return ManagedServer(standin_command(port), base, startup_timeout=60, name="GenRM stand-in"), f"{base}/v1"
    raise InvalidInputError(f"launch must be vllm or standin, not {launch!r}")


@task(cache_policy=NO_CACHE)
def select_pairs(wh: Warehouse, shard: str | None, limit: int | None) -> list[str]:
    """Ids of the curation pairs in this shard (texts are read later, only for pairs with work left)."""
    ids = wh.curation_pair_ids()
    if shard is not None:
        index, count = parse_shard(shard)
        ids = [i for i in ids if pair_bucket(i, count) == index]
    if limit is not None:
        ids = ids[:limit]
    return ids


def _run_judging(pairs: list[PairText], states: States, done: Plan, targets: list[str], config: JudgeConfig,
                 strategy: Strategy, settings: Settings, write: Callable[[pa.Table], None], run_id: str) -> dict[str, Any]:
    """Judge `pairs` (those with work left) on `targets`; every result batch goes through `write`."""
    limits = asyncio.run(endpoint_limits(targets))
    if limits:
        get_run_logger().info("endpoint limits (Prefect global concurrency): %s", limits)
    options = ClientOptions(max_in_flight=settings.judge_max_in_flight, request_timeout=settings.judge_request_timeout,
                            max_retries=settings.judge_max_retries)
    total = sum(len(strategy.initial()) for _ in pairs)
    summary = judge_pairs(
        pairs, endpoints=targets, config=config, strategy=strategy, options=options, states=states,
        write=lambda batch: write(results_table(batch, config.id, run_id)),
        max_attempts=settings.judge_max_attempts, sink_batch=settings.judge_write_batch,
        on_progress=lambda n: progress.report(n, total, "judge"), gate=slot_gate(limits),
        input_budget=settings.judge_input_budget,
    )
    summary["skipped_cached"] += done.skipped_cached
    summary["skipped_exhausted"] += done.exhausted
    summary["endpoint_limits"] = limits
    summary["cost"] = cost_report(requests=summary["requests"], tokens_in=summary["tokens_in"],
                                  tokens_out=summary["tokens_out"], judge_seconds=summary["seconds"], kept=None,
                                  model=cost_model(settings))
    return summary


def split_pending(ids: list[str], strategy: Strategy, states: States, max_attempts: int) -> tuple[list[str], Plan]:
    """(ids with work left, a plan counting what the cache answers for the others)."""
    done = Plan()
    pending = [i for i in ids if planned_slots(i, strategy, states, max_attempts, Plan())]
    for i in set(ids) - set(pending):
        planned_slots(i, strategy, states, max_attempts, done)
    return pending, done


@task(cache_policy=NO_CACHE)
def judge_shard(wh: Warehouse, ids: list[str], endpoints: list[str], config: JudgeConfig, strategy: Strategy,
                settings: Settings, run_id: str) -> dict[str, Any]:
    states = as_states(wh.judgment_states(config.id, ids))
    # Pairs the cache answers in full are counted, not loaded: a rerun reads no text at all.
    pending, done = split_pending(ids, strategy, states, settings.judge_max_attempts)
    summary = _run_judging(wh.pair_texts(pending), states, done, endpoints, config, strategy, settings,
                           wh.write_judgments, run_id)
    summary["pairs"] = len(ids)
    return summary


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
) -> dict[str, Any]:
    """Judge the pending pairs (of one shard "i/n") on the given endpoints, or on a server launched here."""
    log = get_run_logger()
    settings = settings_with(warehouse=warehouse, judge_max_in_flight=max_in_flight,
                             judge_request_timeout=request_timeout)
    config = judge_config_from(settings)
    plan = Strategy.parse(strategy or settings.judge_strategy, settings.judge_adaptive_margin)
    server, targets = _targets(endpoints, launch, port, settings, config)
    run_id = current_run_id()
    with server:
        targets, config = checked_targets(targets, config, settings)
        with Warehouse(settings.warehouse) as wh:
            wh.register_judge_config(config_record(config))
            ids = select_pairs(wh, shard, limit)
            wh.start_judge_run(run_id, config.id, plan.label, targets, shard)
            try:
                summary = judge_shard(wh, ids, targets, config, plan, settings, run_id)
            except BaseException as err:
                wh.finish_judge_run(run_id, "failed", {}, f"{type(err).__name__}: {err}")
                raise
            summary.update(judge_config_id=config.id, strategy=plan.label, shard=shard, endpoints=targets,
                           run_id=run_id, served_models=wh.served_models(run_id), simulated=config.simulated)
            wh.finish_judge_run(run_id, "completed", summary)
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
    shard = read_work(Path(work))
    config = JudgeConfig(**shard.config)
    plan = Strategy.parse(shard.strategy, settings.judge_adaptive_margin)
    out = results_dir(Path(work).parents[2], shard.plan_id, shard.label)
    folded = fold_results(shard.states, out)
    ids = [p[0] for p in shard.pairs]
    pending, done = split_pending(ids, plan, shard.states, settings.judge_max_attempts)
    keep = set(pending)
    pairs = [p for p in shard.pairs if p[0] in keep]
    server, targets = _targets(endpoints, launch, port, settings, config)
    run_id = current_run_id()
    writer = ResultWriter(out, run_id)
    record = {"run_id": run_id, "judge_config_id": config.id, "strategy": plan.label, "endpoints": targets,
              "shard": shard.shard, "started_at": datetime.now(timezone.utc).replace(tzinfo=None), "status": "running"}
    writer.record(record)
    log.info("shard %s of plan %s: %d pairs, %d with work left (%d earlier result files read)", shard.shard,
             shard.plan_id, len(ids), len(pending), folded)
    try:
        with Heartbeat(out, run_id), server:
            targets, served_config = checked_targets(targets, config, settings)
            if served_config.simulated != config.simulated:
                raise EndpointCheckError(
                    f"this worker's endpoints serve {'the SIMULATED stand-in' if served_config.simulated else 'a real judge'}"
                    f" but the plan is for {'simulated' if config.simulated else 'real'} verdicts ({config.id})",
                    hint="point the worker at the judge the plan names (CURATE_JUDGE_SIMULATED on the orchestrator)")
            summary = _run_judging(pairs, shard.states, done, targets, config, plan, settings, writer.write, run_id)
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
