"""The whole job with one set of parameters: ingest each source, judge what is pending, build the next
version, publish it. Each stage is a subflow and can be skipped; the run leaves a yield funnel per source
(read → valid → unique → judged → kept), judge failures and tokens, and where the version went."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)

from flows.ingest import ingest
from flows.judge import judge
from flows.judge_shards import judge_sharded
from flows.publish import publish
from flows.runs import current_run_id, snapshot_dashboard, takes_parameters_of
from flows.versions import EmptyVersionError, build_version
from schemas.summaries import PipelineSummary, StageFailure
from schemas.version import hub_repo
from tasks.curate.certification import NotCertifiedError
from tasks.ingest.sources import parse_source
from tasks.judge.context import JudgeRun
from tasks.judge.endpoints import check_judge
from tasks.pipeline.context import PipelineRun
from tasks.publish.summary import refuse_judging_other_weights
from warehouse.lock import pipeline_lock
from warehouse.store import Warehouse


@flow(name="curate-pipeline", log_prints=False)
@takes_parameters_of(PipelineRun.of)
def curate_pipeline(**parameters: Any) -> PipelineSummary:
    """ingest → judge → build version → publish; `skip` names stages to leave out. With `judge_shards` N,
    judging runs the judge deployment once per shard on the gpu pool instead of in this process (a strategy in
    rounds: once per shard of each round). Its
    parameters are `PipelineRun.of`'s."""
    run = PipelineRun.of(**parameters)
    judging = run.check_files()
    settings = run.settings
    if "judge" not in run.skip and not run.judge_shards and not (run.launch or settings.judge_launch):
        # Fail fast: an unusable judge is found before any stage runs, not after the ingest.
        report = check_judge(list(run.endpoints or settings.judge_endpoints), settings)
        if judging is not None and judging.rm_targets:  # a judge ladder's reward model, before the ingest too
            from tasks.judge.ladder import reward_model_run
            from tasks.judge.targets import judge_config_from

            reward_model_run(judging.served_by(report.usable, judge_config_from(settings, report)))
        if "publish" not in run.skip:
            refuse_judging_other_weights(report.weights, settings.judge_model, run.publish_to, run.allow_other_weights)
    with pipeline_lock(settings.warehouse, settings.pipeline_lock_wait, current_run_id()):
        return _stages(run, judging)


def _stages(run: PipelineRun, judging: JudgeRun | None) -> PipelineSummary:
    log = get_run_logger()
    warehouse, skip = run.warehouse, run.skip
    summary: PipelineSummary = {"ingest": {}, "judge": None, "version": None, "publish": None, "failed": []}
    pending: list[str] = []  # stages whose records the dashboard has not seen yet

    def after(stage: str, changed: bool) -> None:
        # The dashboard sees a stage's data as soon as it changed something; stages that changed nothing
        # (a nightly rerun on unchanged sources) wait for the one refresh at the end.
        pending.append(stage)
        if changed:
            snapshot_dashboard(warehouse, stage)
            pending.clear()

    if "ingest" not in skip:
        for spec in run.sources:
            name, path = parse_source(spec)
            summary["ingest"][name] = ingest(name, path=path, limit=run.limit, warehouse=warehouse,
                                             sources_file=run.sources_file)
        after("ingest", any(s.get("new_pairs") or s.get("new_quarantined") for s in summary["ingest"].values()))
    if judging is not None:
        stage = judge_sharded if run.judge_shards else judge
        summary["judge"] = stage(**judging.flow_parameters(stage))
        after("judge", bool(summary["judge"].get("requests")))
    budget = (summary["judge"] or {}).get("budget") or {}
    if budget.get("stopped"):  # judging stopped at its budget: no version of a pool judged in part
        summary["failed"].append(StageFailure(stage="judge", error=f"stopped at the GPU-hour budget: "
                                              f"{budget['spent_gpu_hours']:.6g} of {budget['gpu_hours']:.6g} "
                                              f"GPU-hours spent, {budget['left_gpu_hours']:.6g} left"))
        log.warning("judging stopped at its GPU-hour budget: no version built, nothing published")
        skip = skip | {"version", "publish"}
    elif run.reward_model_only and judging is not None:  # asked for: judging stopped after the reward model's rung
        log.info("judging stopped after the reward model's rung (reward_model_only): no version built, nothing "
                 "published; estimate the GenRM's rungs now (`curate run --estimate`), then run without it")
        skip = skip | {"version", "publish"}
    if "version" not in skip:
        try:
            summary["version"] = build_version(run.dataset, policy_path=run.policy_path, warehouse=warehouse)
        except (EmptyVersionError, NotCertifiedError) as err:  # no version; the rest of the night goes on
            summary["failed"].append(StageFailure(stage="version", error=str(err)))
            log.warning("no version built: %s", err)
        after("version", bool((summary["version"] or {}).get("new_version")))
    version = summary["version"] or {}
    if "publish" not in skip and run.publish_to and version.get("version"):
        summary["publish"] = publish(run.dataset, version=version["version"], to=run.publish_to, warehouse=warehouse,
                                     allow_other_weights=run.allow_other_weights)
        after("publish", not summary["publish"].get("already_published"))
    if pending:
        snapshot_dashboard(warehouse, pending[-1])
    _report(summary, warehouse)
    return summary


def published_link(target: str, tag: str | None) -> str:
    """A link to a published version: the Hub's tree at its tag, or the local folder."""
    repo = hub_repo(target)
    if repo is not None:
        from huggingface_hub import constants

        return f"{constants.ENDPOINT}/datasets/{repo}/tree/{tag}"
    return Path(target).resolve().as_uri()


def _report(summary: PipelineSummary, warehouse: str) -> None:
    judged = summary.get("judge") or {}
    version = summary.get("version") or {}
    kept_by_source = (version.get("stats") or {}).get("by_source", {})
    judged_by_source: dict[str, int] = {}
    if judged.get("judge_config_id"):
        with Warehouse(warehouse, read_only=True) as wh:
            judged_by_source = wh.judging.judged_by_source(judged["judge_config_id"])
    rows = []
    for name, s in summary["ingest"].items():
        rows.append({"source": name, "read": s["read"], "valid": s["valid"], "unique (new)": s["new_pairs"],
                     "judged (in warehouse)": judged_by_source.get(name, 0), "kept in version": kept_by_source.get(name, 0)})
    if rows:
        create_table_artifact(key="pipeline-funnel", table=rows, description="Yield per source: read, valid and new "
                              "in this run; pairs judged and kept in the version, over the warehouse")
    failed = judged.get("failed") or {}
    if failed:
        create_table_artifact(key="pipeline-judge-failures", table=[{"reason": k, "judgments": v} for k, v in failed.items()],
                              description="Judge failures by reason in this run")
    published = summary.get("publish") or {}
    if published.get("target"):
        create_link_artifact(key="pipeline-published", link=published_link(published["target"], published.get("tag")),
                             link_text=f"{published.get('name')} {published.get('tag')}",
                             description="The version this run published")
    create_markdown_artifact(key="pipeline-report", markdown="\n".join([
        "# Pipeline run",
        f"- judged {judged.get('judged', 0)} judgments ({judged.get('skipped_cached', 0)} from the cache), "
        f"failed {sum(failed.values())} {failed or ''}, {judged.get('requests', 0)} requests, tokens in/out "
        f"{judged.get('tokens_in', 0)}/{judged.get('tokens_out', 0)}, {judged.get('seconds', 0)} s of judging, "
        f"estimated {(judged.get('cost') or {}).get('gpu_hours', 0)} GPU-hours",
        f"- version cost: {((version.get('stats') or {}).get('cost') or {}).get('gpu_hours_per_1000_kept', '-')} "
        "GPU-hours per 1,000 kept pairs (estimate; see the dataset card)",
        f"- version: {version.get('name', '-')} v{version.get('version', '-')} ({version.get('note', 'new')})",
        f"- published: {published.get('target', 'not published')}",
    ]))
