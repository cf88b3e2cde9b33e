"""`curate build-version`, `versions`, `diff`, `publish`: immutable versions and where they go."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from curator.options import bounds, json_option, warehouse_option, with_policy_flags
from curator.output import cell, judge_label, out, print_json, print_summary, print_table, version_lines
from curator.runner import Runner, apply_flags, fail, guarded, runs_flows
from tasks.publish.context import PublishRun

commands = typer.Typer()


@commands.command("build-version")
@runs_flows("build-version")
@with_policy_flags
def build_version(
    name: str = typer.Argument(..., help="dataset name (letters, digits, . _ -)"),
    policy: Optional[Path] = typer.Option(None, "--policy", help="filter policy TOML file (a flag wins over its key)"),
    judge_config: Optional[str] = typer.Option(None, "--judge-config", help="judge configuration id (default: latest)"),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
    runner: Runner = None,
    **policy_flags: Any,
) -> None:
    """Materialize the next immutable version of NAME from the judged pairs and a filter policy."""
    apply_flags(warehouse)
    overrides = {k: v for k, v in policy_flags.items() if v is not None}
    from curator import refusals
    from tasks.curate.context import VersionRun

    # arguments (the name, the flags' values), then files (the policy, the warehouse and its verdicts)
    run = guarded(VersionRun.of, name, policy_path=policy, policy_overrides=overrides, judge_config_id=judge_config)
    guarded(refusals.warehouse, run.settings)
    guarded(refusals.judged, run.settings, run.judge_config_id, run.policy)
    guarded(refusals.pii_detector, run.settings)
    from curator.noop import version_noop

    summary = runner.noop(version_noop, run)
    if summary is None:
        from flows.versions import build_version as build_flow

        summary = runner.flow(build_flow, **run.flow_parameters())
    if as_json:
        print_json(summary)
    else:
        print_table(out, ["", ""], version_lines(summary), title=f"version {name}", show_header=False)


@commands.command()
def versions(
    name: Optional[str] = typer.Argument(None, help="only this dataset's versions (default: every dataset)"),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
) -> None:
    """List dataset versions: rows, content hash, judge (SIMULATED or real), where published."""
    apply_flags(warehouse)
    from common.numbers import count
    from common.settings import get_settings
    from warehouse.store import Warehouse

    with guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        found = wh.versions.versions(name)
        known = sorted({v["name"] for v in wh.versions.versions()}) if name and not found else []
    if name and not found:
        fail(f"no dataset named {name!r}" + (f"; datasets: {', '.join(known)}" if known else ": no version yet"),
              f"build one with `curate build-version {name}`" if not known else None)
    if as_json:
        print_json(found)
        return
    print_table(out, ["name", "version", "parent", "created", "rows", "judge", "content hash", "judge config",
                      "published"],
                [(v["name"], v["version"], v["parent_version"], str(v["created_at"])[:19], count(v["row_count"]),
                  judge_label(v["simulated"], v["judge_weights"]), v["content_hash"], v["judge_config_id"],
                  v["published_tag"]) for v in found])


@commands.command()
def diff(
    name: str = typer.Argument(..., help="the dataset"),
    old: int = typer.Argument(..., metavar="A", min=1, help="the earlier version (a number, as `curate versions` "
                                                            "lists it)"),
    new: int = typer.Argument(..., metavar="B", min=1, help="the later version"),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
) -> None:
    """Pairs added, removed and flipped between versions A and B of NAME, and how the statistics moved."""
    apply_flags(warehouse)
    from common.numbers import count
    from common.settings import get_settings
    from tasks.curate.diff import changes_text, diff_versions
    from warehouse.store import Warehouse

    with guarded(Warehouse, get_settings().warehouse, read_only=True) as wh:
        metas = {v: wh.versions.version_meta(name, v) for v in (old, new)}
        missing = [v for v, m in metas.items() if m is None or m["version"] != v]
        if missing:
            known = [v["version"] for v in wh.versions.versions(name)]
            fail(f"{name} has no version {missing[0]}" + (f": its versions are {', '.join(f'v{k}' for k in known)}"
                                                           if known else ": no such dataset"))
        result = diff_versions(wh.versions.version_rows(name, old), wh.versions.version_rows(name, new), metas[old], metas[new])
    if as_json:
        print_json(result)
        return
    summary = {"added": len(result["added"]), "removed": len(result["removed"]), "flipped": len(result["flipped"]),
               "values moved": len(result["changed"])}
    def counted(value: Any) -> str:
        return cell({k: count(v) for k, v in value.items()} if isinstance(value, dict) else value)

    summary["rows"] = f"{count(result['before']['rows'])} -> {count(result['after']['rows'])}"
    for key in ("mean_margin", "mean_confidence", "by_source", "by_split"):
        summary[key] = f"{counted(result['before'][key])} -> {counted(result['after'][key])}"
    summary["policy"] = changes_text(result["policy_changes"]) or "unchanged"
    if result["judge_config"]:
        summary["judge configuration"] = " -> ".join(result["judge_config"])
    if result["note"]:
        summary["note"] = result["note"]
    print_summary(f"{name} v{old} -> v{new}", summary, False)


@commands.command()
@runs_flows("publish")
def publish(
    name: str = typer.Argument(..., help="the dataset (letters, digits, . _ -)"),
    version: Optional[int] = typer.Argument(None, **bounds(PublishRun, "version"), help="the version to publish "
                                            "(default: the latest)"),
    to: str = typer.Option("published", "--to", help="a local folder (Hub layout) or hf://ORG/NAME"),
    private: bool = typer.Option(False, "--private", help="create the Hub repo private"),
    allow_simulated: bool = typer.Option(False, "--allow-simulated", help="push a version judged by the SIMULATED "
                                         "stand-in to the Hub anyway (its card still says so)"),
    allow_other_weights: bool = typer.Option(False, "--allow-other-weights", help="push a version judged by other "
                                             "weights than the judge's published ones to the Hub anyway (its card "
                                             "still names them)"),
    allow_restricted_licenses: bool = typer.Option(False, "--allow-restricted-licenses", help="push a version with "
                                                   "rows of sources whose license does not allow redistribution "
                                                   "(internal, proprietary, other without a link) to a public Hub "
                                                   "repository anyway"),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """Publish a version: Parquet shards per format and split, a dataset card, a tag per version."""
    apply_flags(warehouse)
    from curator import refusals
    from curator.noop import publish_noop

    # arguments (the names), then files (the version and whether it may go where asked), then the Hub
    run = guarded(PublishRun.of, name, version=version, to=to, private=private, allow_simulated=allow_simulated,
                  allow_other_weights=allow_other_weights, allow_restricted_licenses=allow_restricted_licenses)
    guarded(refusals.version, run.settings, run.name, run.version, run.to, run.allow_simulated,
            run.allow_other_weights, run.private, run.allow_restricted_licenses)
    if run.repo is not None:  # an offline host fails in seconds, not after Prefect's start-up
        from tasks.publish.hub import check_reachable

        guarded(check_reachable, run.repo, retries=run.settings.hub_retries, retry_wait=run.settings.hub_retry_wait)
    summary = runner.noop(publish_noop, run)
    if summary is None:
        from flows.publish import publish as publish_flow

        summary = runner.flow(publish_flow, **run.flow_parameters())
    if not as_json:
        summary = {**summary, "files": f"{len(summary['files'])} files"}
    print_summary(f"publish {name}", summary, as_json)
