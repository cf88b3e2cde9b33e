"""One judge run's context: what is judged how, where, and filed under which run, checked once when it is
made. `JudgeRun.of` is the judge flows' parameters, declared once: the CLI, the pipeline and a deployment's
parameters build the run with it (the flows take its fields by keyword, `flows.runs.takes_parameters_of`), and
the planner, the run loop and the run's record read it from there. A run made for a plan or a benchmark, whose
configuration is already known (a GPU worker's shard, `evaluate-judge`), is made with `JudgeRun.with_config`."""

from __future__ import annotations

import inspect
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from common.errors import InvalidInputError
from common.settings import Settings, settings_with
from tasks.judge.config import JudgeConfig
from tasks.judge.shards import parse_shard
from tasks.judge.strategies import Strategy, parse_strategy


def check_rounds(strategy: Strategy, shard: str | None, target_agreement: float | None, risk: float | None,
                 policy_path: str | None = None, shards: int | None = None) -> None:
    """A strategy that judges in rounds decides each round over the whole pool in one run: no shard (`shards`, the
    coordinator of sharded rounds, splits each round itself); a target, a risk and a policy need such a strategy.
    (The target itself, given or the policy file's, is read and checked once, as the filter policy's:
    `tasks.curate.policy.in_rounds`.)"""
    label = strategy.label
    if shard is not None and shards:
        raise InvalidInputError("--shard judges one hash bucket, --shards splits the run into N: give one of them")
    if not strategy.judges_in_rounds:
        given = [flag for flag, value in (("--target-agreement", target_agreement), ("--risk", risk),
                                          ("--policy", policy_path)) if value is not None]
        if given:
            raise InvalidInputError(f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to a strategy "
                                    f"that judges in rounds (certify[:K]), not to {label}")
        return
    if shard is not None:
        raise InvalidInputError(f"{label} judges in rounds, each decided over the whole judged pool: it cannot judge "
                                "one shard (drop --shard; --shards N judges each round in N shards)")


def check_ladder(strategy: Strategy, rm_endpoints: list[str] | None) -> None:
    """A judge ladder names its reward model's endpoints, and only a ladder does (sharded, its coordinator scores
    rung 0 on them and the shards judge the GenRM's rounds)."""
    from tasks.judge.strategies import Ladder

    is_ladder = isinstance(strategy, Ladder)
    if is_ladder and not rm_endpoints:
        raise InvalidInputError("ladder scores every pair with a reward model first: give --rm-endpoint URL (its vLLM "
                                "pooling server, or `curate judge-standin --kind reward-model`)")
    if rm_endpoints and not is_ladder:
        raise InvalidInputError("--rm-endpoint applies to --strategy ladder[:K], the judge ladder")


def _whole(name: str, value: Any, least: int, most: int | None = None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least
                              or (most is not None and value > most)):
        allowed = f">= {least}" if most is None else f"{least} .. {most}"
        raise InvalidInputError(f"{name} must be a whole number {allowed}, not {value!r}")


@dataclass(frozen=True)
class JudgeRun:
    settings: Settings
    config: JudgeConfig
    strategy: Strategy
    run_id: str = field(compare=False)  # the flow run's (`filed_under`); two runs asked alike are equal
    targets: tuple[str, ...] = ()  # the endpoints it judges on; none while only planning (sharded runs)
    shard: str | None = None  # "i/n": one hash bucket of the pairs; None for all
    limit: int | None = None  # at most this many pairs
    # a strategy that judges in rounds escalates toward a certified version's target (its bounds are the policy's)
    target_agreement: float | None = None
    risk: float | None = None  # None: the policy's
    policy_path: str | None = None  # the filter policy the version will be built by (its certification keys)
    # judges what a coordinator planned (a shard's work file, a round's among them): rounds are decided there
    planned: bool = False
    # judgments at the attempt limit get a fresh count of attempts before the run plans (asked again)
    retry_exhausted: bool = False
    endpoints: tuple[str, ...] | None = None  # the endpoints asked for (None: CURATE_JUDGE_ENDPOINTS)
    launch: str | None = None  # a server the run starts itself: vllm | standin (None: CURATE_JUDGE_LAUNCH)
    port: int | None = None  # the launched server's port (None: CURATE_VLLM_PORT)
    shards: int | None = None  # judged in N shards through the exchange (None: in this run)
    start_timeout: float = 3600.0  # seconds a shard's worker may take to start (shards on the gpu pool)
    # a run in rounds: the filter policy its rounds decide by, read once where the run is made
    # (`tasks.curate.policy.in_rounds`); the judge stage hands it on and never reads it
    policy: Any = None
    # a judge ladder's reward-model endpoints (`ladder[:K]`: rung 0, tasks/judge/ladder.py)
    rm_targets: tuple[str, ...] = ()
    # a judge ladder that stops after its reward model's rung (so that an estimate decides the GenRM's first rung
    # as the run will: docs/judge-ladder.md#estimate-and-budget)
    reward_model_only: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", tuple(self.targets))
        object.__setattr__(self, "rm_targets", tuple(self.rm_targets))
        if self.endpoints is not None:
            object.__setattr__(self, "endpoints", tuple(self.endpoints))
        if not isinstance(self.settings, Settings):
            raise InvalidInputError(f"a judge run needs the settings, not {type(self.settings).__name__}")
        if not isinstance(self.config, JudgeConfig):
            raise InvalidInputError(f"a judge run needs a judge configuration, not {type(self.config).__name__}")
        if not isinstance(self.strategy, Strategy):
            raise InvalidInputError(f"a judge run needs a strategy, not {type(self.strategy).__name__}")
        if not isinstance(self.run_id, str) or not self.run_id.strip():
            raise InvalidInputError("a judge run needs a run id to file its judgments under")
        bad = [t for t in (*self.targets, *(self.endpoints or ())) if not isinstance(t, str) or not t.strip()]
        if bad:
            raise InvalidInputError(f"judge endpoints must be URLs, not {bad[0]!r}")
        if self.shard is not None:
            parse_shard(self.shard)
        _whole("limit", self.limit, 1)
        _whole("shards", self.shards, 1)
        _whole("port", self.port, 1, 65535)
        if isinstance(self.start_timeout, bool) or not isinstance(self.start_timeout, int | float) \
                or not self.start_timeout > 0:
            raise InvalidInputError(f"start_timeout must be a number of seconds > 0, not {self.start_timeout!r}")

    @classmethod
    def of(cls, *, endpoints: list[str] | None = None, strategy: str | None = None, shard: str | None = None,
           shards: int | None = None, limit: int | None = None, launch: str | None = None, port: int | None = None,
           max_in_flight: int | None = None, request_timeout: float | None = None,
           target_agreement: float | None = None, risk: float | None = None, policy_path: str | None = None,
           warehouse: str | None = None, exchange: str | None = None, deployment: str | None = None,
           stale_seconds: float | None = None, start_timeout: float = 3600.0,
           retry_exhausted: bool = False, rm_endpoints: list[str] | None = None, gpus: int | None = None,
           rm_gpus: int | None = None, budget_gpu_hours: float | None = None,
           reward_model_only: bool = False) -> JudgeRun:
        """The judge run asked for, its arguments checked in the order a person fixes them: the settings it
        overrides (each in its bounds), the strategy (the settings' default when None), the shard, the counts, and
        what judging in rounds needs (`check_rounds`). Filed under a fresh run id until a flow files it under its
        own (`filed_under`); its configuration is the settings' until the endpoints' check says what they serve
        (`served_by`). The policy of a run in rounds is read by `tasks.curate.policy.in_rounds`."""
        settings = settings_with(warehouse=warehouse, judge_max_in_flight=max_in_flight,
                                 judge_request_timeout=request_timeout, judge_exchange=exchange,
                                 judge_deployment=deployment, judge_shard_stale_seconds=stale_seconds,
                                 judge_gpus=gpus, judge_rm_gpus=rm_gpus, judge_budget_gpu_hours=budget_gpu_hours)
        parsed = parse_strategy(strategy or settings.judge_strategy, settings)
        if shard is not None:
            parse_shard(shard)
        _whole("shards", shards, 1)
        check_rounds(parsed, shard, target_agreement, risk, policy_path, shards)
        check_ladder(parsed, rm_endpoints)
        if rm_gpus is not None and not rm_endpoints:
            raise InvalidInputError("--rm-gpus applies to a judge ladder's reward model: give --rm-endpoint URL too")
        if reward_model_only and not rm_endpoints:
            raise InvalidInputError("--reward-model-only applies to a judge ladder: give --strategy ladder and "
                                    "--rm-endpoint URL")
        from tasks.judge.targets import judge_config_from

        return cls(settings, judge_config_from(settings), parsed, str(uuid.uuid4()), (), shard, limit,
                   target_agreement, risk, None if policy_path is None else str(policy_path), False,
                   bool(retry_exhausted), None if endpoints is None else tuple(endpoints), launch, port, shards,
                   start_timeout, rm_targets=tuple(rm_endpoints or ()), reward_model_only=bool(reward_model_only))

    @classmethod
    def with_config(cls, settings: Settings, *, config: JudgeConfig, run_id: str, strategy: str | None = None,
                    targets: list[str] | tuple[str, ...] = (), shard: str | None = None, limit: int | None = None,
                    planned: bool = False, retry_exhausted: bool = False) -> JudgeRun:
        """A run whose configuration and run id are already known (a GPU worker's shard of a plan, a benchmark's
        run, the coordinator's plan): the strategy from its text (the settings' default when None)."""
        return cls(settings, config, parse_strategy(strategy or settings.judge_strategy, settings), run_id,
                   tuple(targets), shard, limit, planned=planned, retry_exhausted=bool(retry_exhausted))

    def filed_under(self, run_id: str) -> JudgeRun:
        """The same run, its judgments filed under `run_id` (the flow run's)."""
        return replace(self, run_id=run_id)

    def flow_parameters(self, flow: Any) -> dict[str, Any]:
        """The parameters of `flow` (a judge flow, or its function) for this run, by name: the fields of `of` the
        flow takes, so that `JudgeRun.of(**run.flow_parameters(flow))` is this run again."""
        fn = getattr(flow, "fn", flow)
        return {name: value for name, value in self.parameters().items()
                if name in inspect.signature(fn).parameters}

    def parameters(self) -> dict[str, Any]:
        """`of`'s keywords for this run: the settings it overrides as this run holds them."""
        s = self.settings
        given = {"endpoints": None if self.endpoints is None else list(self.endpoints), "strategy": self.strategy.label,
                 "shard": self.shard, "shards": self.shards, "limit": self.limit, "launch": self.launch,
                 "port": self.port, "max_in_flight": s.judge_max_in_flight,
                 "request_timeout": s.judge_request_timeout, "target_agreement": self.target_agreement,
                 "risk": self.risk, "policy_path": self.policy_path, "warehouse": str(s.warehouse),
                 "exchange": s.judge_exchange, "deployment": s.judge_deployment,
                 "stale_seconds": s.judge_shard_stale_seconds, "start_timeout": self.start_timeout,
                 "retry_exhausted": self.retry_exhausted,
                 "rm_endpoints": list(self.rm_targets) or None, "gpus": s.judge_gpus,
                 "rm_gpus": s.judge_rm_gpus if self.rm_targets else None,
                 "budget_gpu_hours": s.judge_budget_gpu_hours, "reward_model_only": self.reward_model_only}
        return given

    def served_by(self, targets: list[str], config: JudgeConfig) -> JudgeRun:
        """The same run on the endpoints that passed the preflight, with the configuration it found."""
        return replace(self, targets=tuple(targets), config=config)

    @property
    def max_attempts(self) -> int:
        return self.settings.judge_max_attempts

    def start_record(self) -> dict[str, Any]:
        """What the warehouse records when the run starts (`start_judge_run`'s arguments)."""
        return {"config_id": self.config.id, "strategy": self.strategy.label, "endpoints": list(self.targets),
                "shard": self.shard, "one_order_on_purpose": self.strategy.one_order_on_purpose}
