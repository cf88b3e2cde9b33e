"""One version build's context (`common.settings.RunContext`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from common.errors import validated
from common.settings import RunContext, settings_with
from tasks.curate.policy import FilterPolicy


class VersionRun(RunContext):
    """One version build: the dataset's name, the policy (file and flags merged), the judge configuration."""

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
