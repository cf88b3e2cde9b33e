"""A judge run's estimate, read from the warehouse before anything is sent: the pairs pending for each of its judges,
their exact token counts, and each judge's rate (`tasks.judge.estimate` holds the arithmetic; this module, which
reads the run's work, sits beside the runs it estimates so that the arithmetic stays below them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tasks.judge.estimate import estimate, pair_tokens, rate_of, strategy_rungs
from tasks.judge.ladder import reward_model_run
from tasks.judge.warehouse_run import plan_work, work_of


def estimate_run(wh: Any, run: Any,
                 climb: Callable[[list[str]], Sequence[float] | None] | None = None) -> dict[str, Any]:
    """The estimate of `run` (its endpoints checked, nothing sent): its strategy's rungs on the pairs pending for
    each of its judges, at each judge's rate; `climb(pending ids)`: for a run in rounds, the expected share of its
    pending pairs climbing to each rung past the first (the caller's replay of the rounds' rule,
    `tasks.review.rounds.climb_shares`)."""
    settings = run.settings
    genrm = run.config.kind
    work = work_of(wh, run)
    pairs = {genrm: pair_tokens(wh, work.pending)}
    rates = {genrm: rate_of(wh, genrm, settings, settings.gpus_per_server)}
    if run.rm_targets:
        rm = reward_model_run(run)
        rm_work = plan_work(wh.judging, rm.config.id, rm.strategy, rm.shard, rm.limit, rm.max_attempts)
        pairs[rm.config.kind] = pair_tokens(wh, rm_work.pending)
        rates[rm.config.kind] = rate_of(wh, rm.config.kind, settings, settings.judge_rm_gpus)
    shares = climb(list(work.pending)) if climb is not None and work.pending else None
    rungs = [r for r in strategy_rungs(run.strategy, genrm, shares) if r.kind in pairs]
    return {"strategy": run.strategy.label, **estimate(rungs, pairs, rates)}
