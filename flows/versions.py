"""Build a dataset version: the policy applied to one judge configuration's verdicts, stored immutably.

Reads like the process: load the policy, gather the judged pairs, keep what the policy keeps, and store
a new version unless its content equals the latest one's (then say so and make nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from common.errors import UserError
from common.settings import settings_with
from schemas.pair import MESSAGE_TYPE
from schemas.summaries import VersionSummary
from schemas.version import check_name
from tasks.curate.calibration import calibrate
from tasks.curate.cost import cost_model, cost_report
from tasks.curate.policy import FilterPolicy, load_policy
from tasks.curate.select import ROW_FIELDS, JudgedPair, VersionRow, confidences_of, content_hash, select_rows
from tasks.curate.stats import version_stats
from tasks.curate.unchanged import unchanged_version
from tasks.judge.genrm import SideVerdict
from warehouse.store import Warehouse


class EmptyVersionError(UserError, ValueError):
    """The policy keeps nothing: no empty dataset is made."""


def _judged(row: dict[str, Any]) -> JudgedPair:
    verdicts = [(v["o"], SideVerdict(v["score_a"], v["score_b"], v["ranking_a"], v["margin"])) for v in row["verdicts"]]
    return JudgedPair(
        pair_id=row["pair_id"], source=row["source"], source_id=row["source_id"],
        source_revision=row["source_revision"], history=row["history"], response_a=row["response_a"],
        response_b=row["response_b"], human_label=row["human_label"], both_bad=row["both_bad"], domain=row["domain"],
        language=row["language"], contaminated=row["contaminated"], verdicts=verdicts,
        adaptive=bool(row.get("adaptive")), has_failed=bool(row.get("has_failed")),
        model_a=row.get("model_a"), model_b=row.get("model_b"),
    )


def rows_table(name: str, version: int, rows: list[VersionRow]) -> pa.Table:
    columns = {field_name: [getattr(r, field_name) for r in rows] for field_name in ROW_FIELDS} if rows else {}
    columns["prompt"] = pa.array(columns["prompt"], pa.list_(MESSAGE_TYPE))
    return pa.table({"name": [name] * len(rows), "version": pa.array([version] * len(rows), pa.int32()), **columns})


@task(cache_policy=NO_CACHE)
def select_version_rows(wh: Warehouse, config_id: str, policy: FilterPolicy) -> tuple[list[VersionRow], dict]:
    """The kept rows and the version's statistics: p_correct is fitted on this configuration's verdicts
    (cross-fitted on the pairs with a clear human label) before the policy filters on it."""
    pairs = [_judged(r) for r in wh.judged_pairs(config_id)]
    confidences = confidences_of(pairs)
    p_correct, calibration = calibrate(pairs, confidences)
    rows, dropped = select_rows(pairs, policy, p_correct, confidences)
    return rows, version_stats(rows, dropped, len(pairs), pairs, calibration, confidences)


@flow(name="build-version", log_prints=False)
def build_version(
    name: str,
    policy_path: str | None = None,
    policy_overrides: dict[str, Any] | None = None,
    judge_config_id: str | None = None,
    warehouse: str | None = None,
) -> VersionSummary:
    """Materialize the next immutable version of `name`, or say that nothing changed."""
    log = get_run_logger()
    check_name(name)
    policy = load_policy(Path(policy_path) if policy_path else None, policy_overrides)
    settings = settings_with(warehouse=warehouse)
    with Warehouse(settings.warehouse) as wh:
        config_id = judge_config_id or wh.latest_judge_config_id()
        if config_id is None:
            raise EmptyVersionError("no judged pairs yet: run `curate judge` first")
        unchanged = unchanged_version(wh, name, config_id, policy)
        if unchanged is not None:
            log.info(unchanged["note"])
            return unchanged
        inputs = wh.version_inputs(config_id)
        latest = wh.latest_version(name)
        rows, stats = select_version_rows(wh, config_id, policy)
        if not rows:
            raise EmptyVersionError(
                f"the policy keeps none of {stats['considered']} pairs (dropped: {stats['dropped']}); "
                "loosen it rather than publish an empty dataset")
        digest = content_hash(rows, {k: True for k in ("rm_margin_column",) if getattr(policy, k)})
        totals = wh.judging_totals(config_id)
        cost = cost_report(requests=totals["requests"], tokens_in=totals["tokens_in"], tokens_out=totals["tokens_out"],
                           judge_seconds=totals["request_seconds"], kept=len(rows), model=cost_model(settings))
        simulated = wh.config_is_simulated(config_id)
        stats = {**stats, "inputs": inputs, "cost": cost, "simulated": simulated}
        same = wh.version_with_content(name, digest, config_id)
        if same is not None:  # the latest, or an older one (a policy changed and changed back): no copy
            summary = {"name": name, "version": same["version"], "rows": same["row_count"], "content_hash": digest,
                       "created": str(same["created_at"]), "new_version": False,
                       "note": f"unchanged: same content as {name} v{same['version']}", "stats": stats}
            log.info(summary["note"])
            return summary
        version = (latest["version"] + 1) if latest else 1
        revisions: dict[str, list[str]] = {}
        for r in rows:
            revisions.setdefault(r.source, [])
            if r.source_revision not in revisions[r.source]:
                revisions[r.source].append(r.source_revision)
        meta = {"name": name, "version": version, "parent_version": latest["version"] if latest else None,
                "judge_config_id": config_id, "policy": policy.model_dump(), "source_revisions": revisions,
                "row_count": len(rows), "content_hash": digest, "stats": stats, "simulated": simulated}
        wh.write_version(meta, rows_table(name, version, rows))
        created = wh.latest_version(name)["created_at"]
    if simulated:
        log.warning("%s v%d is built on SIMULATED verdicts (the GenRM stand-in): its card says so, and the Hub "
                    "refuses it unless allowed", name, version)
    summary = {"name": name, "version": version, "rows": len(rows), "content_hash": digest, "simulated": simulated,
               "created": str(created), "new_version": True,
               "parent_version": meta["parent_version"], "judge_config_id": config_id, "stats": stats}
    create_table_artifact(key=f"version-{name}".lower().replace("_", "-").replace(".", "-"),
                          table=[{"measure": k, "value": str(v)} for k, v in stats.items()],
                          description=f"{name} v{version}: {len(rows)} rows, content {digest}")
    create_markdown_artifact(
        key=f"version-{name}-summary".lower().replace("_", "-").replace(".", "-"),
        markdown=(f"# {name} v{version}\n\n{len(rows)} rows kept of {stats['considered']} judged pairs "
                  f"(judge configuration `{config_id}`).\n\nDropped: {stats['dropped']}\n\n"
                  f"Splits: {stats['splits']}\n\nContent hash: `{digest}`\n"),
    )
    return summary
