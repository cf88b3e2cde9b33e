"""One publication's context, checked.

The CLI, the flows (their parameters, as a deployment or another flow passes them) and the no-op answers
build it with the same `of(...)`, so a value is refused in the same words whichever way it came in. Bounds live
on the fields (the CLI's flags read theirs from here and from `Settings`); a value out of them is an
`InvalidInputError`, one line naming it, its value and the range. Nothing here imports Prefect.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from common.errors import validated
from common.settings import Settings, settings_with

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class PublishRun(BaseModel):
    """One publication: which version of which dataset, where to, and whether the Hub may take a SIMULATED one."""

    model_config = _FROZEN

    name: str = Field(description="the dataset (letters, digits, . _ -)")
    version: int | None = Field(None, ge=1, description="the version to publish (default: the latest)")
    to: str = Field("published", description="a local folder (Hub layout) or hf://ORG/NAME")
    repo: str | None = Field(None, description="the Hub repository `to` names (None: a local folder)")
    private: bool = Field(False, description="create the Hub repository private")
    allow_simulated: bool = Field(False, description="push a version judged by the SIMULATED stand-in to the Hub")
    settings: Settings

    @classmethod
    def of(cls, name: str, version: int | None = None, to: str = "published", private: bool = False,
           allow_simulated: bool = False, *, warehouse: str | Path | None = None) -> PublishRun:
        from schemas.version import check_name, hub_repo

        check_name(name)
        return validated(cls, {"name": name, "version": version, "to": to, "repo": hub_repo(to), "private": private,
                               "allow_simulated": allow_simulated, "settings": settings_with(warehouse=warehouse)},
                         "invalid publish")

    @property
    def warehouse(self) -> Path:
        return self.settings.warehouse
