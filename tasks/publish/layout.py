"""A version as files in the Hub's dataset layout: Parquet shards per export and split, the card, the
plot, and a marker naming the version. Written to a temporary folder and moved into place in one
rename, so a reader never sees half a version."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.curate.exports import EXPORTS

MARKER = ".curate-version.json"
PLOT = "margin_confidence.svg"
SHARD_ROWS = 50_000


def export_files(folder: Path, rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Write data/<config>/<split>-NNNNN-of-NNNNN.parquet; return {config: [splits written]}."""
    configs: dict[str, list[str]] = {}
    for config, make in EXPORTS.items():
        for split in ("train", "validation"):
            records = [make(r) for r in rows if r["split"] == split]
            if not records:
                continue  # an empty split would give the Hub's loader a pattern with no files
            shards = max(1, -(-len(records) // SHARD_ROWS))
            out = folder / "data" / config
            out.mkdir(parents=True, exist_ok=True)
            for i in range(shards):
                chunk = records[i * SHARD_ROWS : (i + 1) * SHARD_ROWS]
                pq.write_table(pa.Table.from_pylist(chunk), out / f"{split}-{i:05d}-of-{shards:05d}.parquet")
            configs.setdefault(config, []).append(split)
    return configs


def read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None


def write_atomically(final: Path, fill) -> None:  # noqa: ANN001 - fill(folder) writes the files
    """Build the folder beside `final` and rename it into place."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        fill(staging)
        os.replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def list_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
