"""A judge ladder's rung 0 (`curate judge --strategy ladder --rm-endpoint URL`): the reward model scores every pair
of the run, under its own judge configuration, before the GenRM's rounds (`tasks.review.rounds.CertifyRounds`)
decide which pairs the GenRM is asked about. The GenRM's configuration is linked to the reward model's
(`judge_ladders`), so its pool, and every version built on it, reads the reward model's margins beside its own
verdicts (`tasks.curate.ladder`). The run's summary is the GenRM's rounds with the reward model's rung as round 0,
and the reward model's own counts apart (`reward_model`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from schemas.summaries import JudgeSummary
from tasks.judge.config import JudgeConfig
from tasks.judge.context import JudgeRun
from tasks.judge.endpoints import EndpointCheckError, check_endpoints
from tasks.judge.kinds import REWARD_MODEL
from tasks.judge.kinds.reward_model import PROMPT_VERSION
from tasks.judge.run import Rounds
from tasks.judge.strategies.protocol import Slot, Strategy
from tasks.judge.warehouse_run import JudgeWork, judge_and_record, plan_work
from warehouse.store import Warehouse

SCORED = "the reward model's scores of every pair without them"
_RUNG_KEYS = ("judge_config_id", "endpoints", "judged", "failed", "requests", "skipped_cached", "skipped_exhausted",
         "tokens_in", "seconds", "simulated", "run_id")


@dataclass(frozen=True, slots=True)
class RewardScores(Strategy):
    """The reward model's rung: its one slot of every pair (not a strategy one names on the command line)."""

    usage = "reward-model scores"
    takes_k = False
    one_order_on_purpose = False
    label = "ladder:reward-model"

    @classmethod
    def from_spec(cls, k: int | None, settings: Any) -> RewardScores:
        return cls()

    def initial(self) -> list[Slot]:
        return REWARD_MODEL.slots()


def reward_model_run(run: JudgeRun) -> JudgeRun:
    """The reward model's run beside `run` (the GenRM's, its endpoints checked): its endpoints pass the reward
    model's preflight (they answer, serve the configured reward model, render its probe), and are the stand-in
    exactly when the GenRM's are."""
    settings = run.settings
    report = check_endpoints(list(run.rm_targets), settings.judge_rm_model, kind=REWARD_MODEL,
                             allow_other_model=settings.judge_allow_other_model, timeout=settings.judge_check_timeout)
    if report.simulated != run.config.simulated:
        raise EndpointCheckError(
            f"the reward model's endpoints serve {'the SIMULATED stand-in' if report.simulated else 'a real model'} "
            f"but the GenRM's {'the SIMULATED stand-in' if run.config.simulated else 'a real judge'}",
            hint="judge a ladder with real servers or with stand-ins, not both: nothing was judged")
    small = {url: n for url, n in report.contexts.items() if n is not None and n < settings.judge_rm_max_model_len}
    if small:
        url, n = next(iter(small.items()))
        raise EndpointCheckError(f"{url} serves a context of {n} tokens, but the reward model is given "
                                 f"{settings.judge_rm_max_model_len} (CURATE_JUDGE_RM_MAX_MODEL_LEN)",
                                 hint="start vLLM with a larger --max-model-len or lower the setting; nothing was sent")
    config = JudgeConfig(kind=REWARD_MODEL.name, model=settings.judge_rm_model, prompt_version=PROMPT_VERSION,
                         simulated=report.simulated, template=report.template or "", weights=report.weights)
    # its prompts' budget is its own context: nothing is generated
    budget = settings.model_copy(update={"judge_max_model_len": settings.judge_rm_max_model_len,
                                         "judge_max_tokens": 0,  # and its GPUs are its own server's
                                         "vllm_tensor_parallel_size": settings.judge_rm_gpus,
                                         "judge_gpus": settings.judge_rm_gpus,
                                         "vllm_data_parallel_size": 1})
    return JudgeRun(budget, config, RewardScores(), f"{run.run_id}-reward-model", tuple(report.usable), run.shard,
                    run.limit, planned=True)


def score_rung(wh: Warehouse, run: JudgeRun) -> tuple[dict[str, Any], int]:
    """Rung 0 of `run` (the GenRM's, its configuration registered): its configuration linked to the reward model's,
    then the reward model's scores of every pair of the run it has not scored yet. Returns the reward model's
    summary and the pairs it was asked about. A sharded ladder's coordinator runs it too, before its GenRM rounds."""
    rm = reward_model_run(run)
    wh.judging.link_ladder(run.config.id, rm.config.id)
    rm_work = plan_work(wh.judging, rm.config.id, rm.strategy, rm.shard, rm.limit, rm.max_attempts)
    return judge_and_record(wh, rm_work, rm), len(rm_work.pending)


# how a run with --reward-model-only ends: its GenRM's rounds not begun
REWARD_MODEL_ONLY = ("stopped after the reward model's rung (--reward-model-only): an --estimate now "
                     "decides the GenRM's first rung as the run will, and the run without the flag goes on from here")


def judge_ladder(wh: Warehouse, work: JudgeWork, run: JudgeRun, rounds: Rounds) -> JudgeSummary:
    """Rung 0 on the reward model (every pair of the run it has not scored yet), then the GenRM's rounds."""
    scored, asked = score_rung(wh, run)
    if run.reward_model_only:  # stopped after rung 0: the GenRM asked nothing, its rounds not begun
        genrm = judge_and_record(wh, replace(work, pending=[]), run)
        return {**ladder_summary(scored, asked, genrm), "rounds_ended": REWARD_MODEL_ONLY}
    # the GenRM's first round asks nothing: which pairs climb to it is decided once the reward model's scores are in
    # within a budget, the GenRM's rounds have what the reward model left of it
    spent, refused = rung_spent(scored)
    genrm = judge_and_record(wh, replace(work, pending=[]), run, rounds, spent_before=spent, refused=refused)
    return ladder_summary(scored, asked, genrm)


def rung_spent(scored: dict[str, Any]) -> tuple[float, float | None]:
    """What the reward model's rung (its summary) spent of a budget: its measured GPU-seconds, and the GPU-seconds
    of the step the budget refused it (None: the budget did not stop it), which the run's stop then names."""
    budget = scored.get("budget") or {}
    refused = float(budget.get("next_step_gpu_hours") or 0.0) * 3600.0 if budget.get("stopped") else None
    return float((scored.get("cost") or {}).get("gpu_seconds") or 0.0), refused


def ladder_summary(rm: dict[str, Any], asked: int, genrm: dict[str, Any]) -> dict[str, Any]:
    """The GenRM's summary with the reward model's rung as its round 0 (its counts, what was certified once its
    scores were in) and in the run's totals, and the reward model's own counts (`reward_model`)."""
    out = dict(genrm)
    rounds = [dict(r, judge="genrm") for r in genrm.get("rounds") or []]
    if rounds:
        rounds[0].update(judge=REWARD_MODEL.name, requests=rm["requests"], judged=rm["judged"], pairs_asked=asked,
                         how=SCORED)
    out["rounds"] = rounds
    for key in ("requests", "judged", "tokens_in", "tokens_out"):
        out[key] = genrm.get(key, 0) + rm.get(key, 0)
    out["failed"] = dict(Counter(genrm.get("failed") or {}) + Counter(rm.get("failed") or {}))
    # the rungs run one after the other: the run judged for both their times (a run stopped after the reward
    # model's rung said the GenRM's 0.001 s alone)
    if "seconds" in genrm:
        out["seconds"] = round(float(genrm["seconds"] or 0.0) + float(rm.get("seconds") or 0.0), 3)
    if "judgments_per_second" in genrm:  # a sharded run's coordinator has no rate of its own
        done = out["judged"] + sum(out["failed"].values())
        out["judgments_per_second"] = round(done / out["seconds"], 3) if out.get("seconds") else 0.0
    out["reward_model"] = {k: rm.get(k) for k in _RUNG_KEYS}
    spent = [s.get("cost") or {} for s in (genrm, rm)]
    out["cost"] = {**spent[0], "gpu_seconds": round(sum(c.get("gpu_seconds", 0.0) for c in spent), 3),
                   "by_judge": {k: v for c in spent for k, v in (c.get("by_judge") or {}).items()}}
    return out

