"""Judge: the GenRM's verdicts for the pairs that go on to curation, written as they complete.

Reads like the process: decide the configuration and the shard, see what the cache already answers,
bring up a server if this worker runs its own, judge, leave a summary. A rerun sends only what is
missing; failed judgments are asked again until `judge_max_attempts`, and past it when a run is told to
(`retry_exhausted`).
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from common.settings import settings_with
from flows.runs import JUDGE_SERVERS, current_run_id, takes_parameters_of
from schemas.summaries import JudgeSummary
from tasks.curate.policy import in_rounds
from tasks.judge.config import JudgeConfig
from tasks.judge.context import JudgeRun
from tasks.judge.exchange import (
    Exchange,
    Heartbeat,
    ResultWriter,
    fold_results,
    read_work,
    results_dir,
    shared_secret,
)
from tasks.judge.run import run_judging, split_pending
from tasks.judge.targets import (
    checked_targets,
    judge_targets,
    refuse_unplanned,
)
from tasks.judge.warehouse_run import JudgeWork, judge_and_record, work_of
from warehouse.store import Warehouse

JUDGE_SUMMARY_KEYS = ("pairs", "judged", "failed", "skipped_cached", "requests", "tokens_in", "tokens_out", "seconds")




@task(cache_policy=NO_CACHE)
def plan_judging(wh: Warehouse, run: JudgeRun) -> JudgeWork:
    """The curation pairs of this shard and what the cache already answers (texts are read later, only for
    pairs with work left)."""
    return work_of(wh, run)


@task(cache_policy=NO_CACHE)
def judge_shard(wh: Warehouse, work: JudgeWork, run: JudgeRun) -> JudgeSummary:
    return judge_and_record(wh, work, run)


@task(cache_policy=NO_CACHE)
def judge_in_rounds(wh: Warehouse, work: JudgeWork, run: JudgeRun) -> JudgeSummary:
    """Round by round (`certify`): each round's verdicts are written before the next round is decided from the
    warehouse, so a killed run's rerun decides afresh and pays nothing twice."""
    from tasks.review.rounds import CertifyRounds  # here: the certification's numerics only for this strategy

    if run.rm_targets:  # a judge ladder: the reward model's rung first
        from tasks.judge.ladder import judge_ladder

        return judge_ladder(wh, work, run, CertifyRounds(wh, run, work.ids))
    return judge_and_record(wh, work, run, CertifyRounds(wh, run, work.ids))


@flow(name="judge", log_prints=False)
@takes_parameters_of(JudgeRun.of, "endpoints", "strategy", "shard", "limit", "launch", "port", "max_in_flight",
                     "request_timeout", "target_agreement", "risk", "policy_path", "warehouse", "retry_exhausted",
                     "rm_endpoints", "gpus", "rm_gpus", "budget_gpu_hours", "reward_model_only")
def judge(**parameters: Any) -> JudgeSummary:
    """Judge the pending pairs (of one shard "i/n") on the given endpoints, or on a server launched here; a
    strategy that judges in rounds (`certify`) escalates toward `target_agreement` at `risk` (over the policy
    file's, the one the version will be built by). `retry_exhausted`: the judgments at the attempt limit are
    asked again, with a fresh count of attempts (once the endpoints pass their check). Its parameters are
    `JudgeRun.of`'s; the run is checked, its policy read, before any server starts."""
    log = get_run_logger()
    run = in_rounds(JudgeRun.of(**parameters)).filed_under(current_run_id())
    settings = run.settings
    server, targets = judge_targets(run.endpoints, run.launch, run.port, settings, run.config, JUDGE_SERVERS)
    with server:
        began = time.perf_counter()
        run = run.served_by(*checked_targets(targets, run.config, settings, get_run_logger()))
        preflight_seconds = round(time.perf_counter() - began, 3)
        with Warehouse(settings.warehouse) as wh:
            # quote(): Prefect would otherwise walk every state of a large cache looking for futures.
            work = plan_judging(wh, run)
            summary = (judge_in_rounds if run.strategy.judges_in_rounds else judge_shard)(wh, quote(work), run)
    summary["preflight_seconds"] = preflight_seconds
    log.info("judge: %d pairs, %d judged, %d failed, %d cached, %d requests in %.1fs", summary["pairs"],
             summary["judged"], sum(summary["failed"].values()), summary["skipped_cached"], summary["requests"],
             summary["seconds"])
    for r in summary.get("rounds", []):
        log.info("judge round %d: %d pairs asked, %d requests, %d judged; %d pairs certified after it (%s)",
                 r["round"], r["pairs_asked"], r["requests"], r["judged"], r["certified"], r["how"])
    rows = [{"measure": k, "value": str(summary[k])} for k in JUDGE_SUMMARY_KEYS + ("judgments_per_second", "strategy")]
    create_table_artifact(key="judge-summary", table=rows, description=f"Judge run {run.run_id} ({run.config.id})")
    return summary


@flow(name="judge-worker", log_prints=False)
def judge_worker(
    work: str,
    *, endpoints: list[str] | None = None,
    launch: str | None = None,
    port: int | None = None,
    max_in_flight: int | None = None,
    request_timeout: float | None = None,
) -> JudgeSummary:
    """Judge one shard's work file on a GPU worker, writing judgments to the exchange folder (never to the
    warehouse). Endpoints come from the parameters or the worker's CURATE_JUDGE_ENDPOINTS /
    CURATE_JUDGE_LAUNCH. A rerun of the same shard skips what an earlier attempt already wrote. A work file
    changed since it was written, or signed on one side only (CURATE_JUDGE_EXCHANGE_KEY), is refused before
    any request."""
    log = get_run_logger()
    settings = settings_with(judge_max_in_flight=max_in_flight, judge_request_timeout=request_timeout)
    ex, work_file = Exchange.of_work(work)
    shard = read_work(ex, work_file, shared_secret())
    run = JudgeRun.with_config(settings, config=JudgeConfig(**shard.config), run_id=current_run_id(),
                               strategy=shard.strategy, shard=shard.shard, planned=True)
    out = results_dir(ex, shard.plan_id, shard.label)
    folded = fold_results(shard.states, ex, out, shard.results_key)
    ids = [p.pair_id for p in shard.pairs]
    # a round's shard (sharded rounds) asks exactly the judgments its plan names of each pair
    pending, done = split_pending(ids, run.strategy, shard.states, run.max_attempts, shard.wanted)
    keep = set(pending)
    pairs = [p for p in shard.pairs if p.pair_id in keep]
    server, targets = judge_targets(endpoints, launch, port, settings, run.config, JUDGE_SERVERS)
    config = run.config  # the plan's: verdicts stay filed under it whatever the endpoints serve
    writer = ResultWriter(ex, out, run.run_id, shard.results_key)
    record = {"run_id": run.run_id, "judge_config_id": config.id, "strategy": run.strategy.label,
              "endpoints": targets, "shard": shard.shard}
    with writer.recorded_run(record) as outcome:
        log.info("shard %s of plan %s: %d pairs, %d with work left (%d earlier result files read)", shard.shard,
                 shard.plan_id, len(ids), len(pending), folded)
        with Heartbeat(ex, out, run.run_id), server:
            targets, served_config = checked_targets(targets, config, settings, get_run_logger())
            refuse_unplanned(config, served_config)
            record["template"] = served_config.template
            run = run.served_by(targets, config)
            summary = run_judging(run, pairs, shard.states, done, writer.write, wanted=shard.wanted)
        summary.update(pairs=len(ids), judge_config_id=config.id, strategy=run.strategy.label, shard=shard.shard,
                       endpoints=targets, run_id=run.run_id, result_files=writer.seq)
        outcome.summary = summary
    log.info("shard %s: %d judged, %d failed, %d cached, %d requests in %.1fs", shard.shard, summary["judged"],
             sum(summary["failed"].values()), summary["skipped_cached"], summary["requests"], summary["seconds"])
    return summary
