"""Sharded judging: the pending pairs split across GPU workers, their judgments merged here.

Reads like the process: merge what workers left behind, plan the pending judgments, write one work file
per shard, run the judge deployment once per shard on the `gpu` pool (`judge-sharded`), or the worker's flow
in this process (`judge-sharded-here`, `curate judge --shards N`), merge the shards' results, and say plainly
which shards did not finish. A strategy that judges in rounds (`certify`) does so round by round: each round is
decided from the warehouse once the last is merged, as the single-process rounds decide it
(`tasks.review.rounds.CertifyRounds`), with what a failed shard was asked added to the next. Workers never
open the warehouse; only this flow writes to it, and only while it is not waiting on them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.states import Crashed

from common.errors import InvalidInputError, UserError
from common.settings import Settings, settings_with
from flows.runs import JUDGE_SERVERS, current_run_id, takes_parameters_of
from schemas.summaries import MergeSummary, ShardedJudgeSummary
from tasks.curate.policy import in_rounds
from tasks.judge.config import config_record
from tasks.judge.context import JudgeRun
from tasks.judge.cost import cost_model, cost_report
from tasks.judge.estimate import Budget, budget_of
from tasks.judge.exchange import (
    Exchange,
    HeartbeatWatch,
    read_work,
    results_dir,
    shard_label,
    shared_secret,
    write_plan,
)
from tasks.judge.exchange import plan_id as make_plan_id
from tasks.judge.exchange_checks import KEY_ENV
from tasks.judge.ladder import REWARD_MODEL_ONLY, SCORED, ladder_summary, rung_spent, score_rung
from tasks.judge.merge import merge_exchange_into, nothing_merged
from tasks.judge.run import States, Wanted, as_states, first_round, split_pending
from tasks.judge.shards import pair_bucket, pairs_of_shard
from tasks.judge.strategies import Slot, slots_said
from tasks.judge.targets import checked_targets, judge_config_from, judge_targets
from tasks.judge.warehouse_run import work_of
from tasks.review.rounds import CertifyRounds
from warehouse.judging import PairText
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
    plan_id: str = ""

    @property
    def shard(self) -> str:
        return f"{self.index}/{self.count}"


@task(cache_policy=NO_CACHE)
def merge_exchange(warehouse: str, exchange: str) -> MergeSummary:
    """Merge every worker batch file not merged yet, and the workers' run records, checked against their plans
    (what fails is rejected or moved aside, and reported). Idempotent: a file is merged once (by its path)."""
    with Warehouse(warehouse) as wh:
        return merge_exchange_into(wh, Exchange(exchange)).as_dict()


def _write_plan(wh: Warehouse, ex: Exchange, run: JudgeRun, shards: int, pending: list[str], states: States,
                wanted: Wanted | None, texts: dict[str, PairText] | None = None,
                reopened: bool = False) -> tuple[str, dict[int, str]]:
    """One signed work file per non-empty hash bucket of `pending` (a round's: with the judgments `wanted` of
    each pair), and the plan's manifest; returns the plan's id, named by what it asks, and the files' URLs by
    shard."""
    config, label = run.config, run.strategy.label
    pid = make_plan_id(config.id, label, pending, wanted, reopened)
    work = {}
    for index in range(shards):
        mine = [p for p in pending if pair_bucket(p, shards) == index]
        if not mine:
            continue
        keep = set(mine)
        work[index] = ([texts[p] for p in mine] if texts is not None else wh.judging.pair_texts(mine),
                       {k: v for k, v in states.items() if k[0] in keep},
                       None if wanted is None else {p: wanted[p] for p in mine})
    if not work:
        return pid, {}
    paths = write_plan(ex, pid, shards, work, config=asdict(config), strategy=label, secret=shared_secret())
    return pid, {index: ex.url_of(path) for index, path in paths.items()}


def _first_plan(warehouse: str, exchange: str, shards: int, run: JudgeRun) -> dict[str, Any]:
    """The run's first plan: the strategy's judgments of every pending pair, or with a strategy in rounds its
    first round (`Strategy.initial()` of each, exactly)."""
    ex = Exchange(exchange)
    with Warehouse(warehouse) as wh:
        wh.judging.register_judge_config(config_record(run.config))
        work = work_of(wh, run)
        initial = tuple(run.strategy.initial())
        # a ladder's GenRM is asked nothing up front: the reward model's scores decide which pairs climb to it
        pending = [] if run.rm_targets else work.pending
        texts, wanted = None, None
        if run.strategy.judges_in_rounds:  # each pair in its first order (`first_round`), read from its texts
            texts = {p.pair_id: p for p in wh.judging.pair_texts(pending)}
            wanted = first_round(run.strategy, list(texts.values()), work.states)
        pid, files = _write_plan(wh, ex, run, shards, pending, work.states, wanted, texts,
                                 reopened=work.reopened > 0)
    return {"plan_id": pid, "judge_config_id": run.config.id, "strategy": run.strategy.label, "pairs": len(work.ids),
            "pending": len(pending), "requests_planned": len(pending) * len(initial), "skipped_cached": work.done.skipped_cached,
            "skipped_exhausted": work.done.exhausted, "reopened_exhausted": work.reopened, "work": files,
            "how": SCORED if run.rm_targets else f"{slots_said(initial, run.strategy)} of every pair without it"}


@task(cache_policy=NO_CACHE)
def plan_shards(warehouse: str, exchange: str, shards: int, strategy: str | None, limit: int | None,
                retry_exhausted: bool = False) -> dict[str, Any]:
    """Write one work file per non-empty shard of the pending pairs (of a strategy that does not judge in
    rounds); returns the plan."""
    settings = settings_with(warehouse=warehouse)
    # the orchestrator's run: it plans for the workers and judges nothing itself (no endpoints)
    run = JudgeRun.with_config(settings, config=judge_config_from(settings), run_id=current_run_id(),
                               strategy=strategy, limit=limit, retry_exhausted=retry_exhausted)
    return _first_plan(warehouse, exchange, shards, run)


@task(cache_policy=NO_CACHE)
def score_rung_here(warehouse: str, run: JudgeRun) -> tuple[dict[str, Any], int]:
    """A sharded ladder's rung 0, judged by the coordinator itself on the reward model's endpoints (its requests
    are one prefill each, no decoding): every pair the reward model has not scored yet, before the GenRM's rounds
    go to the shards. Returns the reward model's summary and the pairs it was asked about."""
    with Warehouse(warehouse) as wh:
        wh.judging.register_judge_config(config_record(run.config))
        return score_rung(wh, run)


@task(cache_policy=NO_CACHE)
def plan_first_round(warehouse: str, exchange: str, shards: int, run: JudgeRun) -> dict[str, Any]:
    """`run`'s first plan, written as one work file per non-empty shard."""
    return _first_plan(warehouse, exchange, shards, run)


def _unfinished(wh: Warehouse, run: JudgeRun, work_files: list[str]) -> dict[str, tuple[Slot, ...]]:
    """What failed shards' work files asked that the warehouse still lacks (not 'ok', not at the attempt limit):
    pair -> the judgments asked of it. A file that can no longer be trusted is left out (its pairs wait for a
    rerun)."""
    asked: dict[str, tuple[Slot, ...]] = {}
    for url in work_files:
        try:
            work = read_work(*Exchange.of_work(url), shared_secret())
        except (UserError, OSError) as err:
            get_run_logger().warning("the failed shard's work file %s is not asked again: %s", url, err)
            continue
        asked.update(work.wanted or first_round(run.strategy, work.pairs, work.states))
    ids = sorted(asked)
    states = as_states(wh.judging.judgment_states(run.config.id, ids))
    pending, _ = split_pending(ids, run.strategy, states, run.max_attempts, asked)
    return {p: asked[p] for p in pending}


@task(cache_policy=NO_CACHE)
def decide_round(warehouse: str, exchange: str, shards: int, run: JudgeRun, done: int,
                 failed_work: list[str]) -> dict[str, Any]:
    """Round `done` is merged: what a certification at the run's target accepts now, and the next round, written
    as one work file per shard: what the single-process rounds decide from the warehouse (`CertifyRounds`), and
    what the round's failed shards (`failed_work`, their work files) were asked and the warehouse still lacks.
    `next` None, with why (`ended`), when the rounds are over (at the round cap, failed work is not carried)."""
    ex = Exchange(exchange)
    with Warehouse(warehouse) as wh:
        rounds = CertifyRounds(wh, run, pairs_of_shard(wh.judging.curation_pair_ids(), None, run.limit))
        outcome = rounds.after(done)
        carried = _unfinished(wh, run, failed_work) if failed_work and done + 1 < rounds.cap else {}
        decided: dict[str, Any] = {"achieved": outcome.achieved, "ended": outcome.ended, "next": None}
        nxt = outcome.next
        if nxt is None and not carried:
            return decided
        wanted = dict(nxt.wanted) if nxt is not None else {}
        for pair, slots in carried.items():
            wanted[pair] = tuple(dict.fromkeys([*wanted.get(pair, ()), *slots]))
        pending = sorted(wanted)
        states = as_states(wh.judging.judgment_states(run.config.id, pending))
        how = [nxt.how] if nxt is not None else []
        if carried:
            how.append(f"asked again, their shards having failed: {len(carried):,} pairs")
        pid, files = _write_plan(wh, ex, run, shards, pending, states, wanted,
                                 {p.pair_id: p for p in nxt.pairs} if nxt is not None and not carried else None)
        decided.update(ended=None, next={"plan_id": pid, "work": files, "pairs_asked": len(pending),
                                         "requests_planned": sum(len(v) for v in wanted.values()),
                                         "how": "; ".join(how)})
    return decided


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


Dispatch = Callable[[dict[str, Any]], list[ShardRun]]  # a plan's work files judged: each shard's run as it ended


def _by_deployment(settings: Settings, ex: Exchange, shards: int, start_timeout: float) -> Dispatch:
    """Each shard's work file judged by a run of the judge deployment on the gpu pool, watched until it ends."""
    log = get_run_logger()

    def dispatch(plan: dict[str, Any]) -> list[ShardRun]:
        runs = []
        for index, work in sorted(plan["work"].items()):
            fr = run_deployment(settings.judge_deployment, parameters={"work": work}, timeout=0,
                                flow_run_name=f"judge {plan['plan_id']} {index}/{shards}")
            runs.append(ShardRun(index, shards, str(fr.id), plan_id=plan["plan_id"]))
            log.info("shard %d/%d -> flow run %s", index, shards, fr.id)
        _watch(runs, ex, plan["plan_id"], settings.judge_shard_poll_seconds, settings.judge_shard_stale_seconds,
               start_timeout)
        return runs

    return dispatch


def _here(shards: int, endpoints: list[str], max_in_flight: int | None, request_timeout: float | None) -> Dispatch:
    """Each shard's work file judged in this process, one after the other, by the GPU worker's own flow
    (`judge-worker`, a subflow run here) on `endpoints`: a shard that fails leaves the others to run."""
    from flows.judge import judge_worker

    def dispatch(plan: dict[str, Any]) -> list[ShardRun]:
        runs = []
        for index, work in sorted(plan["work"].items()):
            state = judge_worker(work, endpoints=endpoints, max_in_flight=max_in_flight,
                                 request_timeout=request_timeout, return_state=True)
            runs.append(ShardRun(index, shards, str(state.state_details.flow_run_id), state.type.value,
                                 state.message or "", plan_id=plan["plan_id"]))
            if state.type.value != "COMPLETED":
                get_run_logger().error("shard %d/%d of plan %s: %s", index, shards, plan["plan_id"], state.message)
        return runs

    return dispatch


def _merged_sum(a: dict[str, Any], b: MergeSummary) -> dict[str, Any]:
    """Two merges' reports as one."""
    if not a:
        return dict(b)
    rejected = Counter(a["rejected_rows"]) + Counter(b["rejected_rows"])
    return {"files": a["files"] + b["files"], "rows": a["rows"] + b["rows"],
            "run_records": a["run_records"] + b["run_records"], "rejected_rows": dict(rejected.most_common()),
            "quarantined": a["quarantined"] + b["quarantined"], "authenticated": a["authenticated"] and b["authenticated"]}


def _in_shards(run: JudgeRun, shards: int, ex: Exchange, warehouse: str, dispatch: Dispatch,
               settings: Settings) -> ShardedJudgeSummary:
    """Merge what earlier workers left, then judge plan by plan: the run's first (its strategy's judgments, or
    the first round), and with a strategy in rounds each next round, decided from the warehouse once the last
    is merged. A shard that fails leaves the others to finish: its pairs get nothing in that round, and the
    next round, decided afresh, asks them again. Every plan is named by what it asks and every result file is
    merged once, so a rerun of a killed run pays for nothing merged or written before."""
    log = get_run_logger()
    root = str(ex.url)
    before = merge_exchange(warehouse, root)  # a lost worker's finished part counts before planning
    scored = score_rung_here(warehouse, run) if run.rm_targets else None
    plan = plan_first_round(warehouse, root, shards, run)
    summary: ShardedJudgeSummary = {**{k: v for k, v in plan.items() if k not in ("work", "how", "requests_planned")},
                                    "merged_before": before, "shards": []}
    budget = shards_budget(warehouse, run, scored)
    in_rounds = run.strategy.judges_in_rounds
    if not plan["work"] and not in_rounds:
        log.info("judge: nothing pending (%d pairs, %d judgments cached)", plan["pairs"], plan["skipped_cached"])
        summary.update(judged=0, failed={}, requests=0, tokens_in=0, tokens_out=0, seconds=0.0, merged={})
        return summary
    started = time.perf_counter()
    merged: dict[str, Any] = {}
    every: list[ShardRun] = []
    entries: list[dict[str, Any]] = []
    current: dict[str, Any] | None = {**plan, "pairs_asked": plan["pending"]}
    runs: list[ShardRun] = []
    ended = None
    if run.reward_model_only:  # stopped after rung 0, scored here: no shard dispatched, the GenRM's rounds not begun
        current, ended = None, REWARD_MODEL_ONLY
    while current is not None:
        if budget is not None and current["work"] and not budget.allows(
                *_spent(every, warehouse, run.config.kind), current["requests_planned"]):
            ended = "stopped at the GPU-hour budget"
            break
        runs = dispatch(current) if current["work"] else []
        if runs:
            merged = _merged_sum(merged, merge_exchange(warehouse, root))
            lost = [r.flow_run_id for r in runs if r.state != "COMPLETED"]
            if lost:
                with Warehouse(warehouse) as wh:
                    for run_id in lost:
                        wh.runs.mark_judge_run(run_id, "lost", "the shard's flow run did not complete; see the "
                                                               "pipeline run")
        every += runs
        if not in_rounds:
            break
        failed_work = [current["work"][r.index] for r in runs if r.state != "COMPLETED"]
        decided = decide_round(warehouse, root, shards, run, len(entries), failed_work)
        totals = _totals(runs, warehouse)
        entries.append({"round": len(entries), "requests": totals["requests"], "judged": totals["judged"],
                        "pairs_asked": current["pairs_asked"], **decided["achieved"], "how": current["how"],
                        "plan_id": current["plan_id"], "shards": _said(runs)})
        if runs and all(r.state != "COMPLETED" for r in runs):
            ended = f"every shard of round {len(entries) - 1} failed"
            break
        current, ended = decided["next"], decided["ended"]
    summary["merged"] = merged
    summary["seconds"] = round(time.perf_counter() - started, 3)
    summary.update(_totals(every, warehouse))
    summary["cost"] = cost_report(requests=summary["requests"], tokens_in=summary["tokens_in"],
                                  tokens_out=summary["tokens_out"], judge_seconds=summary["seconds"], kept=None,
                                  model=cost_model(settings))
    measured = _measured(every, warehouse)
    summary["cost"].update(measured)
    summary["shards"] = _said(every)
    if budget is not None:
        summary["budget"] = budget.said((measured["by_judge"].get(run.config.kind) or {}).get("gpu_seconds", 0.0))
    if in_rounds:
        summary["rounds"], summary["rounds_ended"] = entries, ended
    if scored is not None:  # the reward model's rung as round 0, its counts and GPU-seconds in the run's
        summary = ladder_summary(scored[0], scored[1], summary)
    if in_rounds:
        for r in summary["rounds"]:
            log.info("judge round %d: %d pairs asked in %d shards, %d requests, %d judged; %d pairs certified after "
                     "it (%s)", r["round"], r["pairs_asked"], len(r["shards"]), r["requests"], r["judged"],
                     r["certified"], r["how"])
    create_table_artifact(key="judge-shards", table=summary["shards"] or [{"shard": "-", "state": "nothing to judge"}],
                          description=f"Judge shards of plan {plan['plan_id']}"
                                      + (f" and the {len(entries) - 1} rounds after it" if len(entries) > 1 else ""))
    problem = nothing_merged(merged) if merged else None
    if problem is not None:
        raise NothingMergedError(problem)
    # what the last plan's failed shards were asked is what the run leaves undone (an earlier round's is asked
    # again by the next round)
    failed = [r for r in runs if r.state != "COMPLETED"]
    if failed:
        why: dict[str, list[str]] = {}  # shards that failed alike are named together
        for r in failed:
            why.setdefault(f"{r.state.lower()}: {r.message or 'see flow run ' + r.flow_run_id}", []).append(r.shard)
        raise ShardsIncompleteError(
            (f"round {len(entries) - 1}: " if in_rounds else "")
            + f"{len(failed)} of {len(runs)} judge shards did not finish ("
            + "; ".join(f"{', '.join(shards)} {message}" for message, shards in why.items())
            + f"). Their finished judgments are merged ({merged['rows']} rows); rerun to judge the rest.")
    return summary


def _said(runs: list[ShardRun]) -> list[dict[str, str]]:
    return [{"shard": r.shard, "plan_id": r.plan_id, "flow_run_id": r.flow_run_id, "state": r.state,
             "message": r.message} for r in runs]


def _coordinator(shards: int, parameters: dict[str, Any]) -> JudgeRun:
    """The run the coordinator plans and decides rounds for (it judges nothing itself), made from the flow's
    parameters (`JudgeRun.of`'s), a strategy in rounds with its policy, before anything is planned."""
    return in_rounds(JudgeRun.of(shards=shards, **parameters)).filed_under(current_run_id())


@flow(name="judge-sharded", log_prints=False)
@takes_parameters_of(JudgeRun.of, "strategy", "deployment", "exchange", "warehouse", "limit", "stale_seconds",
                     "start_timeout", "target_agreement", "risk", "policy_path", "retry_exhausted", "rm_endpoints",
                     "rm_gpus", "gpus", "budget_gpu_hours", "reward_model_only", subject="shards")
def judge_sharded(shards: int, **parameters: Any) -> ShardedJudgeSummary:
    """Judge the pending pairs in `shards` shards, one run of the judge deployment per shard; a strategy in
    rounds (`certify`) judges each round so, toward `target_agreement` at `risk` (over the policy file's).
    `retry_exhausted`: the judgments at the attempt limit are asked again, with a fresh count of attempts. Its
    parameters are `JudgeRun.of`'s."""
    # the orchestrator plans for the workers' servers, which it does not see: the configuration the settings name
    run = _coordinator(shards, parameters)
    settings = run.settings
    ex = Exchange(settings.judge_exchange)
    _require_deployment(settings.judge_deployment)
    return _in_shards(run, shards, ex, str(settings.warehouse),
                      _by_deployment(settings, ex, shards, run.start_timeout), settings)


@flow(name="judge-sharded-here", log_prints=False)
@takes_parameters_of(JudgeRun.of, "endpoints", "strategy", "launch", "port", "exchange", "warehouse", "limit",
                     "max_in_flight", "request_timeout", "target_agreement", "risk", "policy_path", "retry_exhausted",
                     "rm_endpoints", "rm_gpus", "gpus", "budget_gpu_hours", "reward_model_only", subject="shards")
def judge_sharded_here(shards: int, **parameters: Any) -> ShardedJudgeSummary:
    """`curate judge --shards N`: the pending pairs planned in `shards` signed shards through the exchange, as
    for GPU workers, each judged here by the worker's flow on the given endpoints (or a server launched here),
    and merged; a strategy in rounds (`certify`) judges each round so. `retry_exhausted`: the judgments at the
    attempt limit are asked again, with a fresh count of attempts. Its parameters are `JudgeRun.of`'s."""
    run = _coordinator(shards, parameters)
    settings = run.settings
    server, targets = judge_targets(run.endpoints, run.launch, run.port, settings, run.config, JUDGE_SERVERS)
    with server:
        # the plans are for what these endpoints serve, as an unsharded run's verdicts are filed
        run = run.served_by(*checked_targets(targets, run.config, settings, get_run_logger()))
        return _in_shards(run, shards, Exchange(settings.judge_exchange), str(settings.warehouse),
                          _here(shards, list(run.targets), settings.judge_max_in_flight,
                                settings.judge_request_timeout), settings)


def shards_budget(warehouse: str, run: JudgeRun, scored: tuple[dict[str, Any], int] | None) -> Budget | None:
    """The run's GPU-hour budget (None: none), checked by the coordinator before each plan goes to the shards: what
    the shards' runs measured so far (and a ladder's reward model, `scored`), plus the plan's requests at the
    GenRM's rate (this run's so far, else its earlier runs' or the declared one), within it."""
    if run.settings.judge_budget_gpu_hours is None:
        return None
    with Warehouse(warehouse, read_only=True) as wh:
        return budget_of(wh, run, wh.judging.curation_pair_ids(), *rung_spent(scored[0] if scored else {}))


def _spent(runs: list[ShardRun], warehouse: str, kind: str) -> tuple[float, int]:
    """(GPU-seconds, requests) the shards' runs of judge `kind` measured so far."""
    judge = _measured(runs, warehouse)["by_judge"].get(kind) or {}
    return float(judge.get("gpu_seconds") or 0.0), int(judge.get("requests") or 0)


def _measured(runs: list[ShardRun], warehouse: str) -> dict[str, Any]:
    """The GPU-seconds the worker runs measured (their records' `cost.by_judge`), whole and per judge kind."""
    ids = sorted({r.flow_run_id for r in runs})
    by_judge: dict[str, dict[str, float]] = {}
    with Warehouse(warehouse, read_only=True) as wh:
        summaries = wh.runs.judge_run_summaries(ids)
    for s in summaries.values():
        for kind, judge in ((s.get("cost") or {}).get("by_judge") or {}).items():
            mine = by_judge.setdefault(kind, {"gpu_seconds": 0.0, "requests": 0})
            mine["gpu_seconds"] = round(mine["gpu_seconds"] + float(judge.get("gpu_seconds") or 0.0), 3)
            mine["requests"] += int(judge.get("requests") or 0)
    return {"gpu_seconds": round(sum(j["gpu_seconds"] for j in by_judge.values()), 3), "by_judge": by_judge}


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
