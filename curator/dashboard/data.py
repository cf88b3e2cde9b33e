"""What the dashboard shows: the snapshot's queries (`warehouse.dashboard`), with GPU-hours estimated
from tokens under the cost model the snapshot was taken with (no SQL here)."""

from __future__ import annotations

import pandas as pd

from tasks.judge.cost import CostModel
from warehouse import dashboard as queries
from warehouse.dashboard import (  # noqa: F401 - the page reads these through this module
    Filters,
    NoSnapshotError,
    Snapshot,
    agreement,
    certifications,
    confidence_histogram,
    domains,
    evaluations,
    failures,
    funnel,
    judge_configs,
    margin_histogram,
    model_families,
    other_weights_configs,
    personal_data,
    quarantine,
    reliability,
    runs,
    simulated_configs,
    sources,
    version_quality,
    versions,
)


def latest_version(listed: pd.DataFrame) -> int:
    """The position in `listed` (the versions as `versions` lists them) of the version created last: the one the
    page opens on (0 when there is none)."""
    if listed.empty:
        return 0
    created = pd.to_datetime(listed["created_at"]).reset_index(drop=True)
    return int(created.idxmax())


def cost_model(snap: Snapshot) -> CostModel:
    c = snap.cost_model
    return CostModel(c["server_tokens_per_second"], c["gpus_per_server"])


def throughput(snap: Snapshot) -> pd.DataFrame:
    df = queries.throughput(snap)
    model = cost_model(snap)
    df["gpu_hours"] = [round(model.gpu_hours(int(i) + int(o)), 6) for i, o in zip(df["tokens_in"], df["tokens_out"])]
    return df


def version_costs(snap: Snapshot) -> pd.DataFrame:
    df = queries.version_costs(snap)
    model = cost_model(snap)
    tokens = df["tokens_in"].astype("int64") + df["tokens_out"].astype("int64")
    df["tokens_per_kept_pair"] = (tokens / df["kept"].where(df["kept"] > 0)).round(1)
    df["gpu_hours"] = [round(model.gpu_hours(int(t)), 6) for t in tokens]
    df["gpu_hours_per_1000_kept"] = (1000 * df["gpu_hours"] / df["kept"].where(df["kept"] > 0)).round(6)
    return df
