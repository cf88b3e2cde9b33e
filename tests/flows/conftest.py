"""Flow-test helpers: a warehouse with clean synthetic pairs already ingested."""

from __future__ import annotations

from pathlib import Path

from flows.ingest import ingest
from tasks.ingest.synth import write_synth
from warehouse.store import Warehouse


def ingest_clean_pairs(folder: Path, warehouse: Path, rows: int, seed: int, pair_bytes: int = 500) -> int:
    """Ingest `rows` synthetic HelpSteer3 rows with no bad rows or duplicates; returns the curation pairs."""
    data = folder / "hs.jsonl"
    write_synth(data, "helpsteer3", rows, seed=seed, pair_bytes=pair_bytes, bad_rate=0.0, exact_dup_rate=0.0,
                near_dup_rate=0.0)
    ingest("helpsteer3", str(data), warehouse=str(warehouse))
    with Warehouse(warehouse, read_only=True) as wh:
        return wh.counts()["pairs_for_curation"]
