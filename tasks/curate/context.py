"""One version build's context, checked.

The CLI, the flows (their parameters, as a deployment or another flow passes them) and the no-op answers
build it with the same `of(...)`, so a value is refused in the same words whichever way it came in. Bounds live
on the fields (the CLI's flags read theirs from here and from `Settings`); a value out of them is an
`InvalidInputError`, one line naming it, its value and the range. Nothing here imports Prefect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from common.errors import validated
from common.settings import Settings, settings_with
from tasks.curate.policy import FilterPolicy

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class VersionRun(BaseModel):
    """One version build: the dataset's name, the policy (file and flags merged), the judge configuration."""

    model_config = _FROZEN

    name: str = Field(description="the dataset (letters, digits, . _ -)")
    policy_path: Path | None = Field(None, description="the filter policy's TOML file (default: the default policy)")
    policy: FilterPolicy
    judge_config_id: str | None = Field(None, description="the judge configuration (default: the latest)")
    settings: Settings

    @classmethod
    def of(cls, name: str, policy_path: str | Path | None = None, overrides: dict[str, Any] | None = None,
           judge_config_id: str | None = None, *, warehouse: str | Path | None = None) -> VersionRun:
        from schemas.version import check_name
        from tasks.curate.policy import load_policy

        check_name(name)
        load_policy(None, overrides)  # the flags' own values are refused before the file is read
        policy = load_policy(Path(policy_path) if policy_path else None, overrides)
        return validated(cls, {"name": name, "policy_path": policy_path, "policy": policy,
                               "judge_config_id": judge_config_id, "settings": settings_with(warehouse=warehouse)},
                         "invalid version build")

    @property
    def warehouse(self) -> Path:
        return self.settings.warehouse
