"""One publication's context (`common.settings.RunContext`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from common.errors import validated
from common.settings import RunContext, settings_with


class PublishRun(RunContext):
    """One publication: which version of which dataset, where to, and whether the Hub may take a SIMULATED one
    or one judged by other weights than the judge's published ones."""

    name: str = Field(description="the dataset (letters, digits, . _ -)")
    version: int | None = Field(None, ge=1, description="the version to publish (default: the latest)")
    to: str = Field("published", description="a local folder (Hub layout) or hf://ORG/NAME (the scheme in any "
                    "case; recorded as hf://)")
    repo: str | None = Field(None, description="the Hub repository `to` names (None: a local folder)")
    private: bool = Field(False, description="create the Hub repository private")
    allow_simulated: bool = Field(False, description="push a version judged by the SIMULATED stand-in to the Hub")
    allow_other_weights: bool = Field(False, description="push a version judged by other weights than the judge's "
                                      "published ones to the Hub")
    allow_restricted_licenses: bool = Field(False, description="push a version with rows of sources whose license "
                                            "does not allow redistribution to a public Hub repository")

    @classmethod
    def of(cls, name: str, *, version: int | None = None, to: str = "published", private: bool = False,
           allow_simulated: bool = False, allow_other_weights: bool = False,
           allow_restricted_licenses: bool = False, warehouse: str | Path | None = None) -> PublishRun:
        from schemas.version import HF_PREFIX, check_name, hub_repo

        check_name(name)
        repo = hub_repo(to)
        return validated(cls, {"name": name, "version": version, "to": to if repo is None else HF_PREFIX + repo,
                               "repo": repo, "private": private, "allow_simulated": allow_simulated,
                               "allow_other_weights": allow_other_weights,
                               "allow_restricted_licenses": allow_restricted_licenses, "settings": settings_with(warehouse=warehouse)},
                         "invalid publish")

    def flow_parameters(self) -> dict[str, object]:
        """The publish flow's parameters for this run, by name (`of` takes the same)."""
        return {"name": self.name, "version": self.version, "to": self.to, "private": self.private,
                "allow_simulated": self.allow_simulated, "allow_other_weights": self.allow_other_weights,
                "allow_restricted_licenses": self.allow_restricted_licenses, "warehouse": str(self.warehouse)}
