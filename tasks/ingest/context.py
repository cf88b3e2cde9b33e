"""One ingest run's context (`common.settings.RunContext`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from common.errors import validated
from common.settings import RunContext, settings_with

if TYPE_CHECKING:
    from tasks.ingest.sources import Source


class IngestRun(RunContext):
    """One ingest: which source, from where, how much, and the settings it runs under."""

    source: str = Field(description="a source of pairs, by its canonical name")
    path: Path | None = Field(None, description="a local JSONL(.gz) / JSON / Parquet file, or a folder in the "
                                                "Hub's layout, instead of the Hub")
    revision: str | None = Field(None, description="Hub branch, tag or commit (default: the pinned one)")
    limit: int | None = Field(None, ge=1, description="read at most N rows")
    force: bool = Field(False, description="read a revision again even if it was read in full")

    @classmethod
    def of(cls, source: str, *, path: str | Path | None = None, revision: str | None = None, limit: int | None = None,
           force: bool = False, warehouse: str | Path | None = None, batch_size: int | None = None,
           sources_file: str | Path | None = None) -> IngestRun:
        """The run, checked. A declared source whose rows live in a local file reads that file, as `path` would,
        unless `path` names another."""
        from tasks.ingest.sources import get_source

        settings = settings_with(warehouse=warehouse, batch_size=batch_size, sources_file=sources_file)
        found = get_source(source, kind="pairs", settings=settings)  # an unknown name, or an evaluation set, refused
        return validated(cls, {"source": found.name, "path": path if path is not None else found.local_path,
                               "revision": revision, "limit": limit, "force": force, "settings": settings},
                         "invalid ingest")

    def flow_parameters(self) -> dict[str, object]:
        """The ingest flow's parameters for this run, by name (`of` takes the same)."""
        sources_file = self.settings.sources_file
        return {"source": self.source, "path": self.file, "revision": self.revision, "limit": self.limit,
                "force": self.force, "batch_size": self.batch_size, "warehouse": str(self.warehouse),
                "sources_file": str(sources_file) if sources_file is not None else None}

    @property
    def src(self) -> Source:
        """The source itself."""
        from tasks.ingest.sources import get_source

        return get_source(self.source, kind="pairs", settings=self.settings)

    @property
    def file(self) -> str | None:
        """The local file as the readers take it, or None for the Hub."""
        return str(self.path) if self.path is not None else None

    @property
    def batch_size(self) -> int:
        return self.settings.batch_size

