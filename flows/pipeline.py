"""The whole job with one set of parameters: ingest each source, judge what is pending, build the next
version, publish it. Each stage is a subflow and can be skipped; the run leaves a yield funnel per source
(read → valid → unique → judged → kept), judge failures and tokens, and where the version went."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.ingest import ingest
from flows.judge import judge
from flows.publish import publish
from flows.versions import EmptyVersionError, build_version

STAGES = ("ingest", "judge", "version", "publish")


def parse_source(spec: str) -> tuple[str, str | None]:
    """'helpsteer3' (the Hub) or 'helpsteer3=path/to/file.jsonl' (a local file)."""
    name, _, path = spec.partition("=")
    return name.strip(), (path.strip() or None)


@flow(name="curate-pipeline", log_prints=False)
def curate_pipeline(
    sources: list[str] | None = None,
    endpoints: list[str] | None = None,
    launch: str | None = None,
    strategy: str | None = None,
    dataset: str = "preferences",
    policy_path: str | None = None,
    publish_to: str | None = "published",
    skip: list[str] | None = None,
    warehouse: str | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """ingest → judge → build version → publish; `skip` names stages to leave out."""
    log = get_run_logger()
    skip = set(skip or [])
    unknown = skip - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stage(s) to skip: {sorted(unknown)}; stages: {', '.join(STAGES)}")
    summary: dict[str, Any] = {"ingest": {}, "judge": None, "version": None, "publish": None}
    if "ingest" not in skip:
        for spec in sources or []:
            name, path = parse_source(spec)
            summary["ingest"][name] = ingest(name, path, limit=limit, warehouse=warehouse)
    if "judge" not in skip:
        summary["judge"] = judge(endpoints=endpoints, strategy=strategy, launch=launch, warehouse=warehouse)
    if "version" not in skip:
        try:
            summary["version"] = build_version(dataset, policy_path=policy_path, warehouse=warehouse)
        except EmptyVersionError as err:
            summary["version"] = {"error": str(err)}
            log.warning("no version built: %s", err)
    version = summary["version"] or {}
    if "publish" not in skip and publish_to and version.get("version"):
        summary["publish"] = publish(dataset, version["version"], to=publish_to, warehouse=warehouse)
    _report(summary)
    return summary


def _report(summary: dict[str, Any]) -> None:
    judged = summary.get("judge") or {}
    kept_by_source = ((summary.get("version") or {}).get("stats") or {}).get("by_source", {})
    rows = []
    for name, s in summary["ingest"].items():
        rows.append({"source": name, "read": s["read"], "valid": s["valid"], "unique (new)": s["new_pairs"],
                     "kept in version": kept_by_source.get(name, 0)})
    if rows:
        create_table_artifact(key="pipeline-funnel", table=rows, description="Yield per source in this run")
    published = summary.get("publish") or {}
    create_markdown_artifact(key="pipeline-report", markdown="\n".join([
        "# Pipeline run",
        f"- judged {judged.get('judged', 0)} judgments ({judged.get('skipped_cached', 0)} from the cache), "
        f"failed {judged.get('failed', {})}, tokens in/out {judged.get('tokens_in', 0)}/{judged.get('tokens_out', 0)}, "
        f"{judged.get('seconds', 0)} s of judging",
        f"- version: {(summary.get('version') or {}).get('name', '-')} v{(summary.get('version') or {}).get('version', '-')} "
        f"({(summary.get('version') or {}).get('note', 'new')})",
        f"- published: {published.get('target', 'not published')}",
    ]))
