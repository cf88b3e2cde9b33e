"""Which revision of a source a run reads, and its rows in batches: a local file's content hash, or the
Hub's commit, pinned on first use so that every later run reads the same rows until told otherwise."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from tenacity import Retrying, stop_after_attempt, wait_exponential

from common.settings import Settings
from tasks.ingest.read import (
    RawBatch,
    SourceReadError,
    file_revision,
    input_fault,
    read_source,
    resolve_hub_revision,
)
from tasks.ingest.sources import Source
from warehouse.ingest import IngestStore


def known_revision(source: Source, pinned: str | None) -> str | None:
    """The Hub revision a run without `--revision` reads, when it is known without asking the Hub: the commit a
    declared source names (its declaration pins it), else the pin of an earlier run."""
    if source.revision is not None and re.fullmatch(r"[0-9a-f]{40}", source.revision):
        return source.revision
    return pinned


def resolve_revision(source: Source, requested: str | None, pinned: str | None, path: str | None,
                     attempts: int = 4) -> str:
    """Which revision this run reads: a file's or folder's content hash, the requested ref, or the pinned commit (a declared
    commit, else the earlier pin; without one, the source's declared branch or tag, else main, resolved now).
    Resolving a Hub ref is retried: the Hub may be briefly unreachable."""
    if path is not None:
        if (fault := input_fault(Path(path))) is not None:
            raise SourceReadError(f"{path}: {fault if fault != 'no such file' else 'no such file or folder'}")
        return file_revision(Path(path))
    if requested is None and (known := known_revision(source, pinned)) is not None:
        return known
    for attempt in Retrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=2, max=30),
                            reraise=True):
        with attempt:
            return resolve_hub_revision(source.hub_id, requested or source.revision or "main")
    raise AssertionError("unreachable")  # Retrying either returns or re-raises


def pin_revision(store: IngestStore, source: Source, revision: str | None, path: str | None) -> tuple[str, str]:
    """(revision, location) a run reads; a Hub revision becomes the source's pin."""
    rev = resolve_revision(source, revision, store.source_pin(source.name), path)
    if path is None:
        store.set_source_pin(source.name, source.hub_id, rev)
    return rev, str(Path(path).resolve()) if path else f"hf://datasets/{source.hub_id}"


def source_batches(source: Source, path: str | None, revision: str, settings: Settings) -> Iterator[RawBatch]:
    """The source's rows at `revision`, in batches of the configured size."""
    return read_source(
        source.hub_id, source.config, source.splits, path=Path(path) if path else None, revision=revision,
        batch_size=settings.batch_size, retries=settings.hub_retries, retry_wait=settings.hub_retry_wait,
    )
