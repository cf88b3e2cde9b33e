"""A judge run against the warehouse: which pairs have work left under a configuration, and the judging
recorded as a run around them (started, then completed or failed, with its summary)."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.summaries import JudgeSummary
from tasks.judge.config import config_record
from tasks.judge.context import JudgeRun
from tasks.judge.run import Plan, Rounds, States, as_states, run_judging, split_pending
from tasks.judge.shards import pairs_of_shard
from tasks.judge.strategies import Strategy
from warehouse.judging import JudgingStore
from warehouse.store import Warehouse


@dataclass(frozen=True)
class JudgeWork:
    """The pairs of a run (one shard, at most `limit`), what the cache knows of them, and those with work left."""

    ids: list[str]
    states: States
    pending: list[str]
    done: Plan  # counts what the cache answers for the others
    reopened: int = 0  # judgments at the attempt limit given a fresh count of attempts (`retry_exhausted`)


def plan_work(store: JudgingStore, config_id: str, strategy: Strategy, shard: str | None, limit: int | None,
              max_attempts: int, retry_exhausted: bool = False) -> JudgeWork:
    """The run's pairs, what the cache knows of them and those with work left; with `retry_exhausted`, the failed
    judgments at the attempt limit are reopened first (asked again, each with a fresh count of attempts)."""
    ids = pairs_of_shard(store.curation_pair_ids(), shard, limit)
    reopened = store.reopen_exhausted(config_id, ids, max_attempts) if retry_exhausted else 0
    states = as_states(store.judgment_states(config_id, ids))
    pending, done = split_pending(ids, strategy, states, max_attempts)
    return JudgeWork(ids, states, pending, done, reopened)


def work_of(wh: Warehouse, run: JudgeRun) -> JudgeWork:
    """The work of `run`: its shard's pairs (at most its limit) under its configuration and strategy (its judgments
    at the attempt limit reopened first when it is told to retry them)."""
    return plan_work(wh.judging, run.config.id, run.strategy, run.shard, run.limit, run.max_attempts,
                     run.retry_exhausted)


def judge_and_record(wh: Warehouse, work: JudgeWork, run: JudgeRun, rounds: Rounds | None = None,
                     spent_before: float = 0.0, refused: float | None = None) -> JudgeSummary:
    """Judge the pending pairs (their texts read only now: a rerun with nothing left reads none) as `run`, in the
    rounds `rounds` decides when its strategy judges in rounds, within its GPU-hour budget where it has one
    (`spent_before`: GPU-seconds an earlier rung of the same run spent of it, `refused` the GPU-seconds of the step
    it stopped on, None when it did not stop);
    recorded in the warehouse whether it
    completes or fails."""
    from tasks.judge.estimate import budget_of

    config, targets = run.config, list(run.targets)
    budget = budget_of(wh, run, work.pending or work.ids, spent_before, refused)
    wh.judging.register_judge_config(config_record(config))
    with wh.runs.recorded_run("judge", run.run_id, **run.start_record()) as outcome:
        summary = run_judging(run, wh.judging.pair_texts(work.pending), work.states, work.done,
                              wh.judging.write_judgments, rounds=rounds, budget=budget)
        summary.update(pairs=len(work.ids), judge_config_id=config.id, strategy=run.strategy.label, shard=run.shard,
                       endpoints=targets, run_id=run.run_id, served_models=wh.judging.served_models(run.run_id),
                       simulated=config.simulated, weights=config.weights, reopened_exhausted=work.reopened)
        outcome.summary = summary
    return summary
