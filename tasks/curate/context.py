"""One version build's context (`common.settings.RunContext`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from common.errors import validated
from common.settings import RunContext, settings_with
from tasks.curate.policy import FilterPolicy


class VersionRun(RunContext):
    """One version build: the dataset's name, the policy (file and flags merged), the judge configuration.

    Every value of the policy is checked here, once, before Prefect starts (`target_agreement` and `risk` by their
    bounds, 0.5 < A < 1, and beside which keys they may stand). Whether a target can be certified is not: that is
    the certification's own answer (`tasks.review.version_selection`, in the flow), since it depends on the scores
    a model fitted on the training labels gives the held-out labelled pairs and on how many of them disagree with
    the judge above each threshold, which only the selection computes. A bound from the count of labelled pairs
    alone (none disagreeing) would refuse only targets past what every pair agreeing certifies (99.4% on 494 pairs
    at risk 0.05), not the ones a person meets, and a second copy of the certification before the flow would cost
    what the flow costs."""

    name: str = Field(description="the dataset (letters, digits, . _ -)")
    policy_path: Path | None = Field(None, description="the filter policy's TOML file (default: the default policy)")
    policy: FilterPolicy
    judge_config_id: str | None = Field(None, description="the judge configuration (default: the latest)")
    policy_overrides: dict[str, Any] = Field(default_factory=dict, description="the policy's keys given as flags")

    @classmethod
    def of(cls, name: str, *, policy_path: str | Path | None = None, policy_overrides: dict[str, Any] | None = None,
           judge_config_id: str | None = None, warehouse: str | Path | None = None) -> VersionRun:
        from schemas.version import check_name
        from tasks.curate.policy import load_policy

        check_name(name)
        overrides = {k: v for k, v in (policy_overrides or {}).items() if v is not None}
        load_policy(None, overrides)  # the flags' own values are refused before the file is read
        policy = load_policy(Path(policy_path) if policy_path else None, overrides)
        return validated(cls, {"name": name, "policy_path": policy_path, "policy": policy,
                               "policy_overrides": overrides, "judge_config_id": judge_config_id, "settings": settings_with(warehouse=warehouse)},
                         "invalid version build")

    def flow_parameters(self) -> dict[str, Any]:
        """The build-version flow's parameters for this run, by name (`of` takes the same)."""
        return {"name": self.name, "policy_path": None if self.policy_path is None else str(self.policy_path),
                "policy_overrides": dict(self.policy_overrides), "judge_config_id": self.judge_config_id,
                "warehouse": str(self.warehouse)}
