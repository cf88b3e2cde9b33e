"""Which revision of a source a run reads, and its rows in batches: a local file's content hash, or the
Hub's commit, pinned on first use so that every later run reads the same rows until told otherwise."""

from __future__ import annotations

import hashlib
import json
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

# The keys of a declaration that change what its rows become: a change of any is a new revision of the source, so
# that an unchanged file is read again under a fixed column mapping or label rule (license and description only
# update the facts; where the rows live is the revision itself).
READING_KEYS = ("format", "config", "splits", "columns", "label", "models", "domain", "language")


def declaration_digest(source: Source) -> str | None:
    """A short hash of what a declared source's declaration says of reading its rows (`READING_KEYS`, as declared:
    `auto` before the format is told); None for a built-in source."""
    if source.declaration is None:
        return None
    said = {key: source.declaration.get(key) for key in READING_KEYS}
    return hashlib.blake2b(json.dumps(said, sort_keys=True, default=str).encode(), digest_size=6).hexdigest()


def run_revision(source: Source, revision: str) -> str:
    """The revision a run of `source` records and compares with earlier runs: what it reads (a file's hash, a Hub
    commit), and for a declared source `+decl:` and its declaration's digest, so that a changed declaration of
    an unchanged file is a changed input."""
    digest = declaration_digest(source)
    return revision if digest is None else f"{revision}+decl:{digest}"


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
        return file_revision(Path(path), source.config, source.splits)
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
        max_row_bytes=settings.row_byte_limit,
    )
