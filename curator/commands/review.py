"""`curate review push|pull`: pairs to human reviewers in Label Studio, their annotations back.

Thin like the rest of the CLI: the server, the token and the project are checked in seconds before any flow
(or Prefect's temporary API) starts, so an unreachable server, a refused token or a project whose interface
was edited by hand is one line and nothing is written; then the flow runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from curator.options import json_option, warehouse_option
from curator.output import print_summary
from curator.runner import Runner, apply_flags, fail, guarded, runs_flows

review_app = typer.Typer(no_args_is_help=True, help="Human review in Label Studio: push pairs to reviewers, pull "
                         "their labels back (token: LABEL_STUDIO_API_KEY or a Prefect Secret block).")


def _preflight(url: str, title: Optional[str], must_exist: bool) -> None:
    """With the token in the environment, check the server, the token and the project before Prefect starts
    (a token in a Prefect Secret block is read by the flow, which makes the same checks)."""
    import os

    from tasks.review.label_studio import TOKEN_ENV, LabelStudio
    from tasks.review.sync import preflight

    if not os.environ.get(TOKEN_ENV):
        return

    def check() -> None:
        with LabelStudio(url, os.environ[TOKEN_ENV]) as ls:
            preflight(ls, title, must_exist)

    guarded(check)


@review_app.command("push")
@runs_flows("review push")
def push(
    name: str = typer.Argument(..., help="dataset name"),
    version: Optional[int] = typer.Argument(None, help="default: the latest version"),
    to: str = typer.Option(..., "--to", help="Label Studio URL, e.g. http://127.0.0.1:8080"),
    project: Optional[str] = typer.Option(None, "--project", help="project title (default: 'NAME review'); "
                                          "made when missing"),
    select: str = typer.Option("borderline", "--select", help="borderline | disagreement | audit | uncertified (of a certified "
                                "version); from the version's whole judged pool, dropped pairs included"),
    limit: int = typer.Option(100, "--limit", help="the first N pairs of the selection (again: nothing new; "
                              "larger: more)"),
    seed: int = typer.Option(0, "--seed", help="audit: the sample's seed (the same seed extends the same sample)"),
    annotators_per_task: int = typer.Option(1, "--annotators-per-task", help="reviewers asked per task, for a "
                                            "new project (several resolve by majority)"),
    source: Optional[list[str]] = typer.Option(None, "--source", help="draw from this source's pairs only "
                                               "(repeatable): `--select audit --source NAME` is the audit that "
                                               "certifies a source without labels of its own"),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """Push pairs of a version to a Label Studio project, sides drawn per task, the judge's verdict hidden."""
    apply_flags(warehouse)
    from tasks.review.select import SELECTIONS
    from tasks.review.sync import default_title

    if select not in SELECTIONS:
        fail(f"--select must be one of {', '.join(SELECTIONS)}, not {select!r}")
    if limit < 1 or annotators_per_task < 1:
        fail("--limit and --annotators-per-task must be at least 1")
    _preflight(to, project or default_title(name), must_exist=False)
    from flows.review import review_push

    summary = runner.flow(review_push, name=name, version=version, url=to, project=project, selection=select,
                          limit=limit, seed=seed, annotators_per_task=annotators_per_task,
                          **({"sources": list(source)} if source else {}))
    print_summary(f"review push {name}", summary, as_json)


@review_app.command("pull")
@runs_flows("review pull")
def pull(
    from_: str = typer.Option(..., "--from", help="Label Studio URL"),
    project: Optional[str] = typer.Option(None, "--project", help="project title (default: every project this "
                                          "warehouse pushed to on that server)"),
    warehouse: Optional[Path] = warehouse_option(),
    as_json: bool = json_option(),
    runner: Runner = None,
) -> None:
    """Land every annotation that checks out (choice, poster, time, lead time); the others are rejected with their
    reason, reviews deleted or edited in Label Studio withdrawn; nothing twice."""
    apply_flags(warehouse)
    _preflight(from_, project, must_exist=True)
    from flows.review import review_pull

    summary = runner.flow(review_pull, url=from_, project=project)
    if not as_json:
        summary = {k: v for k, v in summary.items() if k != "progress"}
        summary["projects"] = ", ".join(f"{p['project']}: {p['new']} new, {p['updated']} updated, "
                                        f"{sum(p['withdrawn'].values())} withdrawn, "
                                        f"{sum(p['rejected'].values())} not counted" for p in summary["projects"])
    print_summary("review pull", summary, as_json)
