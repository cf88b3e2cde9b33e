"""One judge run's context: what is judged how, where, and filed under which run, checked once when it is
made. The CLI's no-op path, the judge flows and the GPU worker build it the same way (`JudgeRun.of`), and
the planner, the run loop and the run's record read it from there."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from common.errors import InvalidInputError
from common.settings import Settings
from tasks.judge.config import JudgeConfig
from tasks.judge.shards import parse_shard
from tasks.judge.strategies import Strategy, parse_strategy


def check_rounds(strategy: Strategy, shard: str | None, target_agreement: float | None, risk: float | None,
                 policy_path: str | None = None, shards: int | None = None) -> None:
    """A strategy that judges in rounds needs a target (a flag, or the policy file's) and the whole pool decided
    in one run: no shard (`shards`, the coordinator of sharded rounds, splits each round itself); a target, a
    risk and a policy need such a strategy. (Their values are read and checked as the filter policy's:
    `tasks.curate.policy.rounds_policy`.)"""
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
    if target_agreement is None and policy_path is None:
        raise InvalidInputError(f"{label} judges in rounds toward a target: give --target-agreement A (the agreement "
                                "with human preference a certified version is to reach, 0.5 < A < 1), or a --policy "
                                "that sets target_agreement")
    if shard is not None:
        raise InvalidInputError(f"{label} judges in rounds, each decided over the whole judged pool: it cannot judge "
                                "one shard (drop --shard; --shards N judges each round in N shards)")


@dataclass(frozen=True)
class JudgeRun:
    settings: Settings
    config: JudgeConfig
    strategy: Strategy
    run_id: str
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
    # a judge ladder's reward-model endpoints (`ladder[:K]`: rung 0, tasks/judge/ladder.py)
    rm_targets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", tuple(self.targets))
        object.__setattr__(self, "rm_targets", tuple(self.rm_targets))
        if not isinstance(self.settings, Settings):
            raise InvalidInputError(f"a judge run needs the settings, not {type(self.settings).__name__}")
        if not isinstance(self.config, JudgeConfig):
            raise InvalidInputError(f"a judge run needs a judge configuration, not {type(self.config).__name__}")
        if not isinstance(self.strategy, Strategy):
            raise InvalidInputError(f"a judge run needs a strategy, not {type(self.strategy).__name__}")
        if not isinstance(self.run_id, str) or not self.run_id.strip():
            raise InvalidInputError("a judge run needs a run id to file its judgments under")
        bad = [t for t in self.targets if not isinstance(t, str) or not t.strip()]
        if bad:
            raise InvalidInputError(f"judge endpoints must be URLs, not {bad[0]!r}")
        if self.shard is not None:
            parse_shard(self.shard)
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int)
                                       or self.limit < 1):
            raise InvalidInputError(f"limit must be a whole number >= 1, not {self.limit!r}")
        if not self.planned:
            check_rounds(self.strategy, self.shard, self.target_agreement, self.risk, self.policy_path)

    @classmethod
    def of(cls, settings: Settings, *, config: JudgeConfig, run_id: str, strategy: str | None = None,
              targets: list[str] | tuple[str, ...] = (), shard: str | None = None,
              limit: int | None = None, target_agreement: float | None = None,
              risk: float | None = None, policy_path: str | None = None, planned: bool = False,
              retry_exhausted: bool = False, rm_targets: list[str] | tuple[str, ...] = ()) -> JudgeRun:
        """The run a caller asks for: the strategy from its text (the settings' default when None)."""
        return cls(settings, config, parse_strategy(strategy or settings.judge_strategy, settings), run_id,
                   tuple(targets), shard, limit, target_agreement, risk, policy_path, planned, bool(retry_exhausted),
                   tuple(rm_targets))

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
