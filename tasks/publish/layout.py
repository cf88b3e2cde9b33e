"""A version as files in the Hub's dataset layout: Parquet shards per export and split, the card, the
plot, and a marker naming the version. Written to a temporary folder and moved into place in one
rename, so a reader never sees half a version."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from common.errors import InvalidInputError, UserError
from common.processes import process_alive
from tasks.curate.exports import REVIEW_COLUMNS, REVIEWED_ROWS, export_settings, missing_columns, selected_exports

MARKER = ".curate-version.json"
PLOT = "margin_confidence.svg"
SHARD_ROWS = 50_000
SPLITS = ("train", "validation")


class MissingColumnsError(InvalidInputError):
    """The version's rows lack a column an export reads."""


def export_files(folder: Path, rows: list[dict[str, Any]], policy: dict[str, Any] | None = None) -> dict[str, list[str]]:
    """Write data/<config>/<split>-NNNNN-of-NNNNN.parquet for each export the policy selects (its declared
    schema, so a column null in every row keeps its type); return {config: [splits written]}."""
    policy = export_settings(policy, rows)  # a version with reviewed rows carries the review columns
    exports = selected_exports(policy)
    for export in exports if rows else []:  # every export checked before anything is written
        missing = missing_columns(export, rows[0].keys())
        missing += [c for c in REVIEW_COLUMNS if policy.get(REVIEWED_ROWS) and c not in rows[0]]
        if missing:
            raise MissingColumnsError(f"export {export.name!r} needs the column(s) {', '.join(missing)}, "
                                      "which this version's rows lack")
    configs: dict[str, list[str]] = {}
    for export in exports:
        for split in SPLITS:
            records = export.records([r for r in rows if r["split"] == split], policy)
            if not records:
                continue  # an empty split would give the Hub's loader a pattern with no files
            shards = max(1, -(-len(records) // SHARD_ROWS))
            out = folder / "data" / export.name
            out.mkdir(parents=True, exist_ok=True)
            for i in range(shards):
                table = export.table(records[i * SHARD_ROWS : (i + 1) * SHARD_ROWS], policy)
                pq.write_table(table, out / f"{split}-{i:05d}-of-{shards:05d}.parquet")
            configs.setdefault(export.name, []).append(split)
    return configs


def read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None


class PublishTargetError(UserError, NotADirectoryError):
    """A local publish target that cannot hold a folder."""


_STAGING = ".staging-"
STALE_AFTER_S = 24 * 3600  # a staging folder of another host, untouched this long, was abandoned


def _staging_prefix(final: Path) -> str:
    return f".{final.name}{_STAGING}{socket.gethostname()}-{os.getpid()}-"


def remove_stale_staging(parent: Path) -> list[str]:
    """Remove staging folders whose publish died (kill -9): those of this host whose process is gone, and
    any left untouched for a day. Returns their names."""
    removed = []
    host = socket.gethostname()
    for entry in parent.glob(f".*{_STAGING}*") if parent.is_dir() else []:
        parts = entry.name.partition(_STAGING)[2].rsplit("-", 2)  # host (may hold dashes), pid, random
        mine_and_dead = len(parts) == 3 and parts[0] == host and parts[1].isdigit() and not process_alive(int(parts[1]))
        try:
            abandoned = time.time() - entry.stat().st_mtime > STALE_AFTER_S
        except OSError:
            continue
        if entry.is_dir() and (mine_and_dead or abandoned):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


KERNEL_FILESYSTEMS = (Path("/proc"), Path("/sys"))  # they take no folders of files, whoever asks


def _cannot(final: Path, why: str | OSError) -> PublishTargetError:
    if isinstance(why, OSError):
        why = why.strerror or str(why)
    return PublishTargetError(f"cannot publish to {final}: {why}")


def _nearest_existing(final: Path) -> Path:
    """The target itself or its nearest parent that exists (`/` at worst)."""
    try:
        return next(p for p in [final, *final.parents] if p.exists())
    except OSError as err:  # a folder that may not be looked into
        raise _cannot(final, err) from None


def check_folder_target(final: Path) -> None:
    """Refuse a target under /proc or /sys, or whose path runs through a file, before anything is written."""
    try:
        resolved = final.resolve()
    except (OSError, RuntimeError) as err:  # a symlink loop
        raise _cannot(final, err if isinstance(err, OSError) else "a symlink loop") from None
    for kernel in KERNEL_FILESYSTEMS:
        if resolved == kernel or kernel in resolved.parents:
            raise _cannot(final, f"{kernel} is a kernel filesystem, not storage")
    part = _nearest_existing(final)
    if not part.is_dir():
        raise _cannot(final, f"{part} is a file, not a folder")


def check_writable_target(final: Path) -> None:
    """Refuse a target that cannot be made: `check_folder_target`'s refusals, and a nearest existing folder
    that is read-only or not writable by this user."""
    check_folder_target(final)
    part = _nearest_existing(final)
    if not os.access(part, os.W_OK | os.X_OK):
        read_only = os.statvfs(part).f_flag & os.ST_RDONLY
        raise _cannot(final, f"{part} {'is on a read-only filesystem' if read_only else 'is not writable by this user'}")


def write_atomically(final: Path, fill) -> None:
    """Build the folder beside `final` and rename it into place. The staging folder's name says which
    host and process build it, so that a later publish can remove it when that process died. A target that
    cannot be written, before or while it is (a full disk), is `PublishTargetError`: one line."""
    check_writable_target(final)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(final.parent)
        staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(final), dir=final.parent))
    except OSError as err:
        raise _cannot(final, err) from None
    try:
        fill(staging)
        os.replace(staging, final)
    except BaseException as err:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(err, OSError) and not isinstance(err, UserError):
            raise _cannot(final, err) from None
        raise


def version_folder(to: str | Path, meta: dict[str, Any]) -> Path:
    """Where a version goes under a local target. The name carries the content hash: datasets 5.2 caches a
    local folder's data by the folder's base name and config, so two different "v1" folders would read as
    one (measured)."""
    return Path(to) / meta["name"] / f"v{meta['version']}-{meta['content_hash'][:12]}"


def already_there(final: Path, meta: dict[str, Any]) -> bool:
    """Whether `final` already holds this version; refuses a path through a file, or a folder holding
    anything else."""
    check_folder_target(final)
    marker = read_marker(final)
    if final.exists() and (marker is None or marker.get("content_hash") != meta["content_hash"]):
        raise InvalidInputError(f"{final} exists and is not {meta['name']} v{meta['version']}: refusing to overwrite it")
    return final.exists()


def list_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
