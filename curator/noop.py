"""A call with nothing to do is answered from the warehouse alone, before Prefect starts.

Prefect's temporary API server costs seconds of wall and CPU time to start (benchmarks/startup.py); a
nightly `curate ingest` of an unchanged revision, a `judge` with every verdict cached, a `build-version`
on unchanged inputs or a `publish` of a version already in its folder should cost neither. Each answer
is the flow's own no-op branch (the same function, the same summary, the same run record), called without
the flow. Where a Prefect server is configured (`PREFECT_API_URL`), calls always run as flows there, so
its UI shows every one of them.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.settings import get_settings
from schemas.summaries import IngestSummary, JudgeSummary, PublishSummary, VersionSummary
from warehouse.store import Warehouse

if TYPE_CHECKING:
    from tasks.judge.endpoints import EndpointReport


def prefect_server_configured() -> bool:
    """Whether a Prefect API is configured (environment or profile): then every call is a flow run there."""
    from prefect.settings import get_current_settings

    return bool(get_current_settings().api.url)


def ingest_noop(source: str, path: Path | None, revision: str | None, limit: int | None,
                force: bool) -> IngestSummary | None:
    """The summary of an ingest that reads nothing, or None. Only revisions known without the network: a
    local file's content hash, or the Hub revision pinned earlier (no `--revision`)."""
    from tasks.ingest.read import file_revision
    from tasks.ingest.sources import get_source
    from tasks.ingest.summary import record_if_unchanged

    if force or limit is not None or (path is None and revision is not None):
        return None
    started = time.perf_counter()
    settings = get_settings()
    src = get_source(source, kind="pairs")
    with Warehouse(settings.warehouse) as wh:
        if not wh.any_completed_full_ingest(src.name):
            return None  # nothing to compare with: not worth hashing the file before Prefect's API starts
        if path is not None:
            rev, location = file_revision(path), str(path.resolve())
        elif (pinned := wh.source_pin(src.name)) is not None:
            rev, location = pinned, f"hf://datasets/{src.hub_id}"
        else:
            return None
        return record_if_unchanged(wh, src, rev, location, str(uuid.uuid4()), settings, started)


def judge_noop(report: EndpointReport, strategy: str | None, shard: str | None,
               limit: int | None) -> JudgeSummary | None:
    """The summary of a judge run with every verdict cached (recorded as a run that sent nothing), or None.
    `report` is what the endpoint check found."""
    from tasks.judge.strategies import Strategy
    from tasks.judge.targets import judge_config_from
    from tasks.judge.warehouse_run import judge_and_record, plan_work

    settings = get_settings()
    config = judge_config_from(settings, report)
    plan = Strategy.parse(strategy or settings.judge_strategy, settings.judge_adaptive_margin)
    with Warehouse(settings.warehouse) as wh:
        work = plan_work(wh, config.id, plan, shard, limit, settings.judge_max_attempts)
        if work.pending:
            return None
        return judge_and_record(wh, work, report.usable, config, plan, settings, str(uuid.uuid4()), shard)


def version_noop(name: str, policy_path: Path | None, overrides: dict[str, Any],
                 judge_config_id: str | None) -> VersionSummary | None:
    """The latest version's summary when its inputs and policy are unchanged, or None."""
    from tasks.curate.policy import load_policy
    from tasks.curate.unchanged import unchanged_version

    policy = load_policy(policy_path, overrides)
    with Warehouse(get_settings().warehouse, read_only=True) as wh:
        config_id = judge_config_id or wh.latest_judge_config_id()
        return None if config_id is None else unchanged_version(wh, name, config_id, policy)


def publish_noop(name: str, version: int | None, to: str) -> PublishSummary | None:
    """The summary of a version already in its folder under a local target (recorded as published), or None."""
    from schemas.version import NAME_PATTERN
    from tasks.publish.summary import record_if_already_published

    if to.startswith("hf://") or not NAME_PATTERN.fullmatch(name):
        return None  # the Hub is asked by the flow; a bad name is refused by it
    with Warehouse(get_settings().warehouse) as wh:
        return record_if_already_published(wh, name, version, to)
