"""Build a dataset version: the policy applied to one judge configuration's verdicts, stored immutably.

Reads like the process: load the policy, gather the judged pairs, keep what the policy keeps, and store
a new version unless its content equals the latest one's (then say so and make nothing).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from common.errors import UserError
from schemas.summaries import VersionSummary
from tasks.curate.context import VersionRun
from tasks.curate.exports import export_options
from tasks.curate.figures import estimated_lengths
from tasks.curate.personal_data import redacted_texts
from tasks.curate.policy import FilterPolicy, promised
from tasks.curate.select import content_hash
from tasks.curate.unchanged import unchanged_version
from tasks.ingest.pii_facts import backfill
from tasks.judge.cost import cost_model, cost_report, kept_gpu_seconds
from tasks.review.version_selection import version_selection
from warehouse.store import Warehouse


class EmptyVersionError(UserError, ValueError):
    """The policy keeps nothing: no empty dataset is made."""


@task(cache_policy=NO_CACHE)
def scan_unscanned_pairs(wh: Warehouse) -> int:
    """The personal-data scan of pairs landed before it existed, or scanned under older rules (a backfill:
    no pair id changes); nothing when every pair is scanned."""
    return backfill(wh.pii)


@task(cache_policy=NO_CACHE)
def select_version_rows(wh: Warehouse, config_id: str, policy: FilterPolicy) -> tuple[pa.Table, dict]:
    """The version's selection (`version_selection`): its kept rows and statistics."""
    return version_selection(wh, config_id, policy)


def source_revisions(rows: pa.Table) -> dict[str, list[str]]:
    """Each source's revisions among the rows, in the order they first appear (pair id order)."""
    seen = rows.select(["source", "source_revision"]).to_pandas().drop_duplicates()
    out: dict[str, list[str]] = {}
    for source, revision in seen.itertuples(index=False):
        out.setdefault(source, []).append(revision)
    return out


@flow(name="build-version", log_prints=False)
def build_version(
    name: str,
    *, policy_path: str | None = None,
    policy_overrides: dict[str, Any] | None = None,
    judge_config_id: str | None = None,
    warehouse: str | None = None,
) -> VersionSummary:
    """Materialize the next immutable version of `name`, or say that nothing changed."""
    log = get_run_logger()
    asked = VersionRun.of(name, policy_path=policy_path, policy_overrides=policy_overrides,
                          judge_config_id=judge_config_id, warehouse=warehouse)
    policy, settings = asked.policy, asked.settings
    with Warehouse(settings.warehouse) as wh:
        config_id = asked.judge_config_id or wh.versions.latest_judge_config_id()
        if config_id is None:
            raise EmptyVersionError("no judged pairs yet: run `curate judge` first")
        rescanned = scan_unscanned_pairs(wh)
        if rescanned:
            log.info("scanned %d pairs for personal data and secrets (landed before the scan, or under other "
                     "rules or another detector model)", rescanned)
        unchanged = unchanged_version(wh.versions, name, config_id, policy)
        if unchanged is not None:
            log.info(unchanged["note"])
            return unchanged
        inputs = wh.versions.version_inputs(config_id)
        latest = wh.versions.latest_version(name)
        rows, stats = select_version_rows(wh, config_id, policy)
        if not rows.num_rows:
            raise EmptyVersionError(
                f"the policy keeps none of {stats['pairs_judged']} pairs judged (dropped: {stats['dropped']}); "
                "loosen it rather than publish an empty dataset")
        lengths = estimated_lengths(wh.versions.token_estimates(rows))
        # personal data and secrets replaced by placeholders in the version's texts (the pairs keep theirs)
        redacted = redacted_texts(wh.pii, rows.column("pair_id"), policy.pii_actions())
        digest = content_hash(wh.versions.row_digests(rows, redacted),
                              {**export_options(policy.model_dump()), **promised(policy)})
        totals = wh.judging.judging_totals(config_id)
        cost = cost_report(requests=totals["requests"], tokens_in=totals["tokens_in"], tokens_out=totals["tokens_out"],
                           judge_seconds=totals["request_seconds"], kept=rows.num_rows, model=cost_model(settings))
        cost.update(kept_gpu_seconds(wh.judging.measured_gpu_seconds(config_id), rows.num_rows))
        simulated = wh.judging.config_is_simulated(config_id)
        weights = wh.judging.config_weights(config_id)
        stats = {**stats, "lengths": lengths, "inputs": inputs, "cost": cost, "simulated": simulated,
                 "judge_weights": weights}
        same = wh.versions.version_with_content(name, digest, config_id)
        if same is not None:  # the latest, or an older one (a policy changed and changed back): no copy
            summary = {"name": name, "version": same["version"], "rows": same["row_count"], "content_hash": digest,
                       "created": str(same["created_at"]), "new_version": False,
                       "note": f"unchanged: same content as {name} v{same['version']}", "stats": stats}
            log.info(summary["note"])
            return summary
        version = (latest["version"] + 1) if latest else 1
        revisions = source_revisions(rows)
        meta = {"name": name, "version": version, "parent_version": latest["version"] if latest else None,
                "judge_config_id": config_id, "policy": policy.model_dump(), "source_revisions": revisions,
                "row_count": rows.num_rows, "content_hash": digest, "stats": stats, "simulated": simulated,
                "judge_weights": weights}
        wh.versions.write_version(meta, rows, redacted)
        created = wh.versions.latest_version(name)["created_at"]
    if simulated:
        log.warning("%s v%d is built on SIMULATED verdicts (the GenRM stand-in): its card says so, and the Hub "
                    "refuses it unless allowed", name, version)
    if weights:
        log.warning("%s v%d is built on verdicts of other weights than the judge's published ones (%s): its card "
                    "says so, and the Hub refuses it unless allowed", name, version, weights)
    summary = {"name": name, "version": version, "rows": rows.num_rows, "content_hash": digest, "simulated": simulated,
               "judge_weights": weights,
               "created": str(created), "new_version": True,
               "parent_version": meta["parent_version"], "judge_config_id": config_id, "stats": stats}
    create_table_artifact(key=f"version-{name}".lower().replace("_", "-").replace(".", "-"),
                          table=[{"measure": k, "value": str(v)} for k, v in stats.items()],
                          description=f"{name} v{version}: {rows.num_rows} rows, content {digest}")
    create_markdown_artifact(
        key=f"version-{name}-summary".lower().replace("_", "-").replace(".", "-"),
        markdown=(f"# {name} v{version}\n\n{rows.num_rows} rows kept of {stats['pairs_judged']} pairs judged "
                  f"(judge configuration `{config_id}`).\n\nDropped: {stats['dropped']}\n\n"
                  f"Splits: {stats['splits']}\n\nContent hash: `{digest}`\n"),
    )
    return summary
