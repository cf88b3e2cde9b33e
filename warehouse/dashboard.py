"""The dashboard's queries, over its snapshot (never the warehouse), as plain DataFrames.

Every function takes the snapshot path and the filters, opens the file read-only for the one query, and
closes it: the pipeline renames a fresh snapshot over it after each stage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd


class NoSnapshotError(FileNotFoundError):
    """No snapshot yet: nothing has run, or the snapshot was never refreshed."""


@dataclass(frozen=True)
class Filters:
    sources: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    dataset: str | None = None
    version: int | None = None


@dataclass
class Snapshot:
    path: Path
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path | str) -> Snapshot:
        path = Path(path)
        if not path.exists():
            raise NoSnapshotError(f"no dashboard snapshot at {path}: run the pipeline (`curate run`) or "
                                  "`curate snapshot` first")
        snap = cls(path)
        row = snap.frame("SELECT * FROM snapshot_info").iloc[0].to_dict()
        row["cost_model"] = json.loads(row["cost_model"])
        snap.info = row
        return snap

    def frame(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        con = duckdb.connect(str(self.path), read_only=True)
        try:
            return con.execute(sql, params or []).df()
        finally:
            con.close()

    @property
    def cost_model(self) -> dict[str, Any]:
        """The throughput assumptions GPU-hours were estimated with when the snapshot was taken."""
        return self.info["cost_model"]


def _in(column: str, values: tuple[str, ...]) -> tuple[str, list[Any]]:
    """A filter clause: `column IN (...)`, or true when nothing is selected."""
    if not values:
        return "TRUE", []
    return f"{column} IN ({', '.join('?' * len(values))})", list(values)


def sources(snap: Snapshot) -> list[str]:
    return snap.frame("SELECT DISTINCT source FROM dash_funnel ORDER BY 1")["source"].tolist()


def domains(snap: Snapshot) -> list[str]:
    return snap.frame("SELECT DISTINCT domain FROM dash_margin_histogram UNION SELECT DISTINCT domain "
                      "FROM dash_confidence_histogram ORDER BY 1")["domain"].tolist()


# Columns of `dash_versions` that a snapshot taken before migration 015 (or 017: the weights) lacks (unknown).
_VERSION_FIGURES = ("simulated", "pairs_judged", "agreement", "agree", "comparable", "human_ties", "both_bad",
                    "pool_agreement", "judge_weights")


def versions(snap: Snapshot) -> pd.DataFrame:
    df = snap.frame("SELECT * FROM dash_versions ORDER BY dataset, version DESC")
    for column in _VERSION_FIGURES:
        if column not in df:
            df[column] = None
    return df


def funnel(snap: Snapshot, f: Filters) -> pd.DataFrame:
    where, params = _in("source", f.sources)
    return snap.frame(f"SELECT * FROM dash_funnel WHERE {where} ORDER BY source", params)


def quarantine(snap: Snapshot, f: Filters) -> pd.DataFrame:
    where, params = _in("source", f.sources)
    return snap.frame(f"SELECT source, reason, CAST(sum(rows) AS BIGINT) AS rows FROM quarantine_reasons WHERE {where} "
                      "GROUP BY ALL ORDER BY rows DESC", params)


def margin_histogram(snap: Snapshot, f: Filters) -> pd.DataFrame:
    w1, p1 = _in("source", f.sources)
    w2, p2 = _in("domain", f.domains)
    return snap.frame(f"SELECT abs_margin_bin, CAST(sum(pairs) AS BIGINT) AS pairs FROM dash_margin_histogram WHERE {w1} AND {w2} "
                      "GROUP BY 1 ORDER BY 1", p1 + p2)


def confidence_histogram(snap: Snapshot, f: Filters) -> pd.DataFrame:
    w1, p1 = _in("source", f.sources)
    w2, p2 = _in("domain", f.domains)
    return snap.frame(f"SELECT confidence_bin, CAST(sum(pairs) AS BIGINT) AS pairs FROM dash_confidence_histogram WHERE dataset = ? "
                      f"AND version = ? AND {w1} AND {w2} GROUP BY 1 ORDER BY 1", [f.dataset, f.version] + p1 + p2)


def agreement(snap: Snapshot, f: Filters) -> pd.DataFrame:
    w1, p1 = _in("source", f.sources)
    w2, p2 = _in("domain", f.domains)
    return snap.frame(
        f"SELECT source, domain, CAST(sum(pairs) AS BIGINT) AS pairs, CAST(sum(comparable) AS BIGINT) AS comparable, "
        f"CAST(sum(agree) AS BIGINT) AS agree, "
        f"round(100.0 * sum(agree) / nullif(sum(comparable), 0), 1) AS agreement_pct, "
        f"CAST(sum(human_ties) AS BIGINT) AS human_ties, CAST(sum(judge_ties) AS BIGINT) AS judge_ties FROM dash_agreement "
        f"WHERE {w1} AND {w2} GROUP BY ALL ORDER BY source, domain", p1 + p2)


def failures(snap: Snapshot) -> pd.DataFrame:
    return snap.frame("SELECT failure_reason, CAST(sum(judgments) AS BIGINT) AS judgments FROM dash_judge_failures GROUP BY 1 "
                      "ORDER BY 2 DESC")


def throughput(snap: Snapshot) -> pd.DataFrame:
    columns = ("run_id, strategy, shard, status, started_at, seconds, judgments, ok, tokens_in, tokens_out, "
               "judgments_per_s, tokens_per_s")
    try:
        return snap.frame(f"SELECT {columns}, concurrency FROM dash_judge_throughput ORDER BY started_at")
    except duckdb.BinderException:  # a snapshot taken before runs recorded their concurrency
        return snap.frame(f"SELECT {columns} FROM dash_judge_throughput ORDER BY started_at")


def version_quality(snap: Snapshot) -> pd.DataFrame:
    return snap.frame("SELECT * FROM dash_version_quality ORDER BY dataset, version DESC")


def model_families(snap: Snapshot, f: Filters) -> pd.DataFrame:
    return snap.frame("SELECT stage, family, pairs, wins, win_rate FROM dash_model_families WHERE dataset = ? "
                      "AND version = ? ORDER BY stage DESC, pairs DESC", [f.dataset, f.version])


def reliability(snap: Snapshot, f: Filters) -> pd.DataFrame:
    return snap.frame("SELECT predicted, observed, pairs FROM dash_reliability WHERE dataset = ? AND version = ? "
                      "ORDER BY predicted", [f.dataset, f.version])


def certifications(snap: Snapshot) -> list[dict[str, Any]]:
    """Each certified version's `stats.certification` as it was stored (dataset, version, simulated, and the
    report under `certification`), newest version first per dataset; none from a snapshot taken before
    migration 022."""
    try:
        df = snap.frame("SELECT dataset, version, simulated, certification FROM dash_certification "
                        "ORDER BY dataset, version DESC")
    except duckdb.CatalogException:
        return []
    return [{"dataset": r.dataset, "version": int(r.version), "simulated": bool(r.simulated),
             "certification": json.loads(r.certification)} for r in df.itertuples()]


def personal_data(snap: Snapshot, f: Filters) -> pd.DataFrame:
    """Per kind, what the selected version did with the personal data and secrets found in its judged pool
    (`dash_personal_data`); empty from a snapshot taken before migration 026."""
    try:
        return snap.frame("SELECT kind, action, pairs, findings, version_pairs, version_findings "
                          "FROM dash_personal_data WHERE dataset = ? AND version = ? ORDER BY kind",
                          [f.dataset, f.version])
    except duckdb.CatalogException:
        return pd.DataFrame(columns=["kind", "action", "pairs", "findings", "version_pairs", "version_findings"])


def version_costs(snap: Snapshot) -> pd.DataFrame:
    return snap.frame("SELECT * FROM dash_version_costs ORDER BY dataset, version")


def judge_configs(snap: Snapshot) -> pd.DataFrame:
    """Judge configurations and what they judged; an older snapshot without the view gives none (one taken
    before migration 017 knows no weights)."""
    try:
        df = snap.frame("SELECT * FROM dash_judge_configs")
    except duckdb.CatalogException:
        df = pd.DataFrame(columns=["judge_config_id", "model", "simulated", "judgments", "eval_judgments"])
    if "weights" not in df:
        df["weights"] = None
    return df


def _used(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df["judgments"] > 0) | (df["eval_judgments"] > 0)]


def simulated_configs(snap: Snapshot) -> list[str]:
    """Configurations whose verdicts (shown anywhere on the page) came from the SIMULATED stand-in."""
    used = _used(judge_configs(snap))
    return used[used["simulated"].astype(bool)]["judge_config_id"].tolist()


def other_weights_configs(snap: Snapshot) -> dict[str, str]:
    """{configuration: the weights} of those whose verdicts (shown anywhere on the page) came from other weights
    than the judge's published ones."""
    used = _used(judge_configs(snap))
    used = used[used["weights"].notna() & (used["weights"] != "")]
    return dict(zip(used["judge_config_id"], used["weights"]))


def evaluations(snap: Snapshot) -> pd.DataFrame:
    return snap.frame("SELECT benchmark, created_at, accuracy, model_card_accuracy, scored, failed, strategy, "
                      "served_models, judge_config_id FROM dash_judge_evaluations ORDER BY created_at DESC")


def runs(snap: Snapshot, limit: int = 50) -> pd.DataFrame:
    return snap.frame("SELECT kind, subject, status, started_at, finished_at, seconds, error FROM dash_runs "
                      "ORDER BY started_at DESC LIMIT ?", [limit])
