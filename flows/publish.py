"""Publish a dataset version: to a local folder in the Hub's layout (the default), or to the Hub.

Reads like the process: read the version, lay out its files (Parquet shards per format and split, the
card, its plots), then place them: a local folder by one rename, the Hub by one commit and a tag `vN`.
Publishing what is already published does nothing and says so; a failed upload leaves the version
marked unpublished.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from schemas.summaries import PublishSummary
from tasks.ingest.source_facts import ASSUMED, SourceFacts, facts_in
from tasks.ingest.sources import warehouse_facts
from tasks.publish.card import LICENSE_FILE, card_markdown, distributions_svg, license_fields, license_markdown
from tasks.publish.context import PublishRun
from tasks.publish.layout import (
    MARKER,
    PLOT,
    already_there,
    export_files,
    list_files,
    version_folder,
    write_atomically,
)
from tasks.publish.quality_card import RELIABILITY_PLOT, RISK_COVERAGE_PLOT, reliability_svg, risk_coverage_svg
from tasks.publish.summary import (  # noqa: F401 - the errors are part of this flow's interface
    OtherWeightsVersionError,
    RestrictedLicenseError,
    SimulatedVersionError,
    UnknownVersionError,
    publish_summary,
    refuse_other_weights,
    refuse_restricted_licenses,
    refuse_simulated,
    restricted_sources,
    version_to_publish,
)
from warehouse.store import Warehouse


def _licenses(rows: list[dict[str, Any]], facts: dict[str, SourceFacts]) -> list[str]:
    """Each source's license, as its card states it: from the facts stored with its pairs."""
    def license_of(name: str) -> str:
        f = facts_in(facts, name)
        return f.license if f.origin != ASSUMED and f.license else "unknown"

    return [f"{s}: {license_of(s)}" for s in sorted({r["source"] for r in rows})]


def synthetic_sources(source_revisions: dict[str, list[str]], reads: set[tuple[str, str]]) -> list[str]:
    """The version's sources whose pairs came from rows `curate synth` wrote (a revision of theirs read as such)."""
    return sorted(s for s, revisions in source_revisions.items() if any((s, r) in reads for r in revisions))


def _filler(meta: dict[str, Any], rows: list[dict[str, Any]], judge_config: dict[str, Any],
            facts: dict[str, SourceFacts], synthetic: list[str]):
    def fill(folder: Path) -> None:
        configs = export_files(folder, rows, meta["policy"])
        licenses = _licenses(rows, facts)
        if license_fields(licenses).get("license_link"):
            (folder / LICENSE_FILE).write_text(license_markdown(licenses))
        (folder / PLOT).write_text(distributions_svg([r["margin"] for r in rows], [r["confidence"] for r in rows]))
        calibration = meta["stats"].get("calibration") or {}
        if calibration.get("status") == "fitted":
            (folder / RELIABILITY_PLOT).write_text(
                reliability_svg(calibration["bins"], calibration.get("ece"), calibration["labelled"]))
        certification = meta["stats"].get("certification") or {}
        if certification.get("certified") and certification.get("curve"):  # the card links it (`certification_markdown`)
            (folder / RISK_COVERAGE_PLOT).write_text(risk_coverage_svg(certification))
        (folder / "README.md").write_text(card_markdown(
            name=meta["name"], version=meta["version"], content_hash=meta["content_hash"], rows=rows,
            stats=meta["stats"], policy=meta["policy"], judge_config=judge_config,
            source_revisions=meta["source_revisions"], licenses=licenses, configs=configs, plot_file=PLOT,
            simulated=bool(meta.get("simulated")), weights=meta.get("judge_weights"), synthetic=synthetic,
        ))
        (folder / MARKER).write_text(
            '{"name": "%s", "version": %d, "content_hash": "%s"}' % (meta["name"], meta["version"], meta["content_hash"]))
    return fill


@flow(name="publish", log_prints=False)
def publish(
    name: str, *, version: int | None = None, to: str = "published", private: bool = False, warehouse: str | None = None,
    allow_simulated: bool = False,
    allow_other_weights: bool = False,
    allow_restricted_licenses: bool = False,
) -> PublishSummary:
    """Publish `name` (its latest version unless `version`) to a local folder or to `hf://ORG/NAME`."""
    log = get_run_logger()
    # the name, version and target checked as the CLI checks them
    run = PublishRun.of(name, version=version, to=to, private=private, allow_simulated=allow_simulated,
                        allow_other_weights=allow_other_weights, allow_restricted_licenses=allow_restricted_licenses,
                        warehouse=warehouse)
    settings, to = run.settings, run.to  # `to` as recorded: hf://ORG/NAME whatever the case of its scheme
    with Warehouse(settings.warehouse, read_only=True) as wh:
        meta = version_to_publish(wh.versions, name, version)
        rows = wh.versions.version_rows(name, meta["version"])
        judge_config = wh.judging.judge_config(meta["judge_config_id"])
        facts = warehouse_facts(wh.sources)
        synthetic = synthetic_sources(meta["source_revisions"], wh.runs.synthetic_reads())
    tag = f"v{meta['version']}"
    fill = _filler(meta, rows, judge_config, facts, synthetic)

    if run.repo is not None:
        import tempfile

        repo_id = run.repo
        refuse_simulated(meta, to, allow_simulated)
        refuse_other_weights(meta, to, allow_other_weights)
        refuse_restricted_licenses(meta, to, restricted_sources(rows, facts), private, allow_restricted_licenses)
        from tasks.publish.hub import publish_folder_to_hub, resolve_hf_token  # the Hub path only when asked

        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "upload"
            folder.mkdir()
            fill(folder)
            files = list_files(folder)
            result = publish_folder_to_hub(folder, repo_id, tag, token=resolve_hf_token(),
                                           commit_message=f"{name} {tag} ({meta['content_hash']})", private=private,
                                           retries=settings.hub_retries, retry_wait=settings.hub_retry_wait)
        target, commit, already = to, result.commit, result.already_published
    else:
        final = version_folder(to, meta)
        already = already_there(final, meta)
        if not already:
            write_atomically(final, fill)
        files, target, commit = list_files(final), str(final.resolve()), None

    with Warehouse(settings.warehouse) as wh:
        wh.versions.mark_published(name, meta["version"], target, tag, commit)
    summary = publish_summary(meta, target, tag, commit, files, already)
    log.info("%s %s %s %s", name, tag, "already published at" if already else "published to", target)
    create_table_artifact(key=f"publish-{name}".lower().replace("_", "-").replace(".", "-"),
                          table=[{"file": f} for f in files], description=f"{name} {tag} at {target}")
    create_markdown_artifact(key=f"publish-{name}-link".lower().replace("_", "-").replace(".", "-"),
                             markdown=f"# {name} {tag}\n\n{'Already published' if already else 'Published'} at "
                                      f"`{target}` ({len(rows)} rows, content `{meta['content_hash']}`).\n")
    return summary
