"""A call with nothing to do is answered from the warehouse alone, before Prefect starts.

Prefect's temporary API server costs seconds of wall and CPU time to start (benchmarks/startup.py); a
nightly `curate ingest` of an unchanged revision, a `judge` with every verdict cached, a `build-version`
on unchanged inputs or a `publish` of a version already in its folder should cost neither. Each answer
is the flow's own no-op branch (the same function, the same summary, the same run record), called without
the flow, and given the stage's run context built as the flow builds it (`tasks/<stage>/context.py`). Where a
Prefect server is configured (`PREFECT_API_URL`), calls always run as flows there, so its UI shows every one
of them.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from schemas.summaries import IngestSummary, JudgeSummary, PublishSummary, VersionSummary
from warehouse.store import Warehouse

if TYPE_CHECKING:
    from tasks.curate.context import VersionRun
    from tasks.ingest.context import IngestRun
    from tasks.judge.context import JudgeRun
    from tasks.judge.endpoints import EndpointReport
    from tasks.publish.context import PublishRun


def prefect_server_configured() -> bool:
    """Whether a Prefect API is configured (environment or profile): then every call is a flow run there."""
    from prefect.settings import get_current_settings

    return bool(get_current_settings().api.url)


def ingest_noop(run: IngestRun) -> IngestSummary | None:
    """The summary of an ingest that reads nothing, or None. Only revisions known without the network: a
    local file's content hash, or the Hub revision pinned earlier (no `--revision`)."""
    from tasks.ingest.read import file_revision
    from tasks.ingest.revisions import known_revision, run_revision
    from tasks.ingest.summary import record_if_unchanged

    if run.force or run.limit is not None or (run.path is None and run.revision is not None):
        return None
    started = time.perf_counter()
    src = run.src
    with Warehouse(run.settings.warehouse) as wh:
        if not wh.runs.any_completed_full_ingest(src.name):
            return None  # nothing to compare with: not worth hashing the file before Prefect's API starts
        if run.path is not None:
            rev, location = file_revision(run.path, src.config, src.splits), str(run.path.resolve())
        elif (pinned := known_revision(src, wh.ingest.source_pin(src.name))) is not None:
            rev, location = pinned, f"hf://datasets/{src.hub_id}"
        else:
            return None
        return record_if_unchanged(wh, src, run_revision(src, rev), location, str(uuid.uuid4()), run.settings,
                                   started)


def judge_noop(report: EndpointReport, run: JudgeRun) -> JudgeSummary | None:
    """The summary of a judge run with every verdict cached (recorded as a run that sent nothing), or None.
    `report` is what the endpoint check found, `run` the run the CLI made (`JudgeRun.of`, its policy read). A run
    in rounds has nothing to do when its first round has nothing to send and the warehouse's verdicts call for no
    further round."""
    from tasks.judge.targets import judge_config_from
    from tasks.judge.warehouse_run import judge_and_record, work_of

    settings = run.settings
    run = run.served_by(report.usable, judge_config_from(settings, report))
    with Warehouse(settings.warehouse) as wh:
        work = work_of(wh, run)
        if work.pending:
            return None
        rounds = None
        if run.strategy.judges_in_rounds:
            from tasks.review.rounds import CertifyRounds

            rounds = CertifyRounds(wh, run, work.ids)
        if rounds is not None and rounds.after(0).next is not None:
            return None  # (the same decision again below is not made twice: the warehouse is unchanged)
        return judge_and_record(wh, work, run, rounds)


def version_noop(run: VersionRun) -> VersionSummary | None:
    """The latest version's summary when its inputs and policy are unchanged, or None."""
    from tasks.curate.unchanged import unchanged_version

    with Warehouse(run.settings.warehouse, read_only=True) as wh:
        config_id = run.judge_config_id or wh.versions.latest_judge_config_id()
        return None if config_id is None else unchanged_version(wh.versions, run.name, config_id, run.policy)


def publish_noop(run: PublishRun) -> PublishSummary | None:
    """The summary of a version already in its folder under a local target (recorded as published), or None."""
    from tasks.publish.summary import record_if_already_published

    if run.repo is not None:
        return None  # the Hub is asked by the flow
    with Warehouse(run.settings.warehouse) as wh:
        return record_if_already_published(wh.versions, run.name, run.version, run.to)
