"""What every flow shares: the id its records are filed under, and parameters declared once."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from typing import Any

from prefect.context import get_run_context


def current_run_id() -> str:
    """This flow run's id, or a fresh one when the flow function runs outside Prefect."""
    try:
        return str(get_run_context().flow_run.id)
    except Exception:  # noqa: BLE001 - no run context
        return str(uuid.uuid4())


def takes_parameters_of(declaration: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flow's parameters are `declaration`'s (a run context's `of`: keyword-only, with their types and
    defaults): Prefect reads them from the signature this sets, for deployments' schemas and for binding, and the
    flow receives them as `**parameters`. One list of parameters, not one in the flow and a copy in its context."""
    signature = inspect.signature(declaration)

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__signature__ = signature.replace(return_annotation=inspect.signature(fn).return_annotation)
        return fn

    return declare
