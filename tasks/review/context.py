"""The contexts of a review push and of a scheduled review sync (`common.settings.RunContext`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from common.errors import InvalidInputError, validated
from common.settings import RunContext, settings_with


class ReviewPushRun(RunContext):
    """One push to Label Studio: which version's pairs, chosen how, how many."""

    name: str
    version: int | None = Field(None, ge=1, description="the version (default: the latest)")
    selection: str = Field("borderline", description="borderline | disagreement | audit | uncertified")
    limit: int = Field(100, ge=1, description="the first N pairs of the selection")
    seed: int = Field(0, description="audit: the sample's seed")
    annotators_per_task: int = Field(1, ge=1, description="reviewers asked per task")

    @classmethod
    def of(cls, name: str, version: int | None = None, selection: str = "borderline", limit: int = 100,
           seed: int = 0, annotators_per_task: int = 1, *, warehouse: str | Path | None = None) -> ReviewPushRun:
        from tasks.review.select import SELECTIONS

        if selection not in SELECTIONS:
            raise InvalidInputError(f"unknown selection {selection!r}: one of {', '.join(SELECTIONS)}")
        return validated(cls, {"name": name, "version": version, "selection": selection, "limit": limit, "seed": seed,
                               "annotators_per_task": annotators_per_task,
                               "settings": settings_with(warehouse=warehouse)}, "invalid review push")


class ReviewSyncRun(RunContext):
    """One scheduled review sync: the datasets whose new versions are pushed, and how many pairs of each."""

    datasets: list[str] | None = Field(None, description="the datasets (default: every dataset with a version)")
    limit: int = Field(100, ge=0, description="borderline pairs pushed per new version (0: none)")
    audit_limit: int = Field(0, ge=0, description="audit pairs pushed per new version (0: none)")

    @classmethod
    def of(cls, datasets: list[str] | None = None, limit: int = 100, audit_limit: int = 0, *,
           warehouse: str | Path | None = None) -> ReviewSyncRun:
        return validated(cls, {"datasets": datasets, "limit": limit, "audit_limit": audit_limit,
                               "settings": settings_with(warehouse=warehouse)}, "invalid review sync")
