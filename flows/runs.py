"""What every flow shares: the id its records are filed under, parameters declared once, the servers a judging
flow may start itself, and the dashboard's snapshot refreshed after a stage."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import get_run_context

from common.settings import Settings
from tasks.judge.config import JudgeConfig
from tasks.judge.targets import LAUNCHERS, Launcher
from warehouse.snapshot import refresh_dashboard


def current_run_id() -> str:
    """This flow run's id, or a fresh one when the flow function runs outside Prefect."""
    try:
        return str(get_run_context().flow_run.id)
    except Exception:  # noqa: BLE001 - no run context
        return str(uuid.uuid4())


def takes_parameters_of(declaration: Callable[..., Any], *names: str,
                        subject: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flow's parameters are `declaration`'s (a run context's `of`: keyword-only, with their types and
    defaults), or those of them that `names` names, in that order: Prefect reads them from the signature this sets,
    for deployments' schemas and for binding, and the flow receives them as `**parameters`. `subject`: the one the
    flow also takes first by position, and must be given (the flow's function takes it by name before
    `**parameters`). One list of parameters, not one in each flow and a copy in its context."""
    declared = inspect.signature(declaration).parameters
    unknown = [n for n in (*names, *([subject] if subject else [])) if n not in declared]
    if unknown:
        raise TypeError(f"takes_parameters_of: {declaration.__qualname__} declares no {unknown}")
    chosen = [declared[n] for n in names or declared if n != subject]
    if subject is not None:
        given = declared[subject]
        annotation = given.annotation.removesuffix(" | None") if isinstance(given.annotation, str) else \
            given.annotation  # a subject must be given
        chosen.insert(0, given.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD, default=inspect.Parameter.empty,
                                       annotation=annotation))

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__signature__ = inspect.signature(declaration).replace(
            parameters=chosen, return_annotation=inspect.signature(fn).return_annotation)
        return fn

    return declare


@task(cache_policy=NO_CACHE)
def snapshot_dashboard(warehouse: str, stage: str) -> None:
    """Refresh what the dashboard reads (`refresh_dashboard`); a failure here is logged, never fails the data's
    run."""
    try:
        refresh_dashboard(warehouse, stage)
    except Exception as err:  # noqa: BLE001 - the dashboard is a reader; the pipeline's data comes first
        get_run_logger().error("dashboard snapshot after %s failed: %s", stage, err)


def standin_server(settings: Settings, config: JudgeConfig, port: int) -> tuple[AbstractContextManager, str]:
    """The SIMULATED stand-in on this host (tests and demos only: it lives in the testing package)."""
    from testing.genrm_standin import StandinProcess

    return StandinProcess(port=port), f"http://127.0.0.1:{port}/v1"


# The servers a judge flow may start itself (`launch`): vLLM, and the stand-in for tests and demos.
JUDGE_SERVERS: dict[str, Launcher] = {**LAUNCHERS, "standin": standin_server}
