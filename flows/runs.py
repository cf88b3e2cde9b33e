"""What every flow shares: the id its records are filed under."""

from __future__ import annotations

import uuid

from prefect.context import get_run_context


def current_run_id() -> str:
    """This flow run's id, or a fresh one when the flow function runs outside Prefect."""
    try:
        return str(get_run_context().flow_run.id)
    except Exception:  # noqa: BLE001 - no run context
        return str(uuid.uuid4())
