"""Per-endpoint caps shared by every flow: a Prefect global concurrency limit per judge endpoint.

A GPU server has a fixed batch; two judge runs pointed at it must not each send their own `max_in_flight`.
When a limit named after the endpoint exists on the Prefect API, each request holds one of its slots
while it is in flight. Without one, nothing changes (and no API call is made per request).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from urllib.parse import urlsplit

from prefect.client.orchestration import get_client
from prefect.concurrency.asyncio import concurrency
from prefect.exceptions import ObjectNotFound

from common.errors import InvalidInputError

PREFIX = "judge-endpoint"


def checked_endpoint(endpoint: str) -> str:
    """`endpoint` if a limit may be named after it: an http(s) URL with a host, as the judge runs that would hold
    its slots are given."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(f"not a judge endpoint: {endpoint!r} (an http:// or https:// base URL, e.g. "
                                "http://gpu-3:8000/v1)")
    return endpoint


def limit_name(endpoint: str) -> str:
    """'http://gpu-3:8000/v1' -> 'judge-endpoint-gpu-3-8000-v1' (limit names take no slashes)."""
    parts = urlsplit(endpoint.rstrip("/"))
    port = parts.port or (443 if parts.scheme == "https" else 80)
    key = f"{parts.hostname or endpoint}-{port}{parts.path}"
    return f"{PREFIX}-" + re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-").lower()


async def endpoint_limits(endpoints: list[str]) -> dict[str, int]:
    """The endpoints that have an active limit on the Prefect API, with their slot counts."""
    found: dict[str, int] = {}
    async with get_client() as client:
        for url in endpoints:
            try:
                limit = await client.read_global_concurrency_limit_by_name(limit_name(url))
            except ObjectNotFound:
                continue
            if limit.active:
                found[url.rstrip("/")] = limit.limit
    return found


async def set_endpoint_limit(endpoint: str, slots: int) -> str:
    """Create or update the limit of an endpoint; returns its name."""
    name = limit_name(endpoint)
    async with get_client() as client:
        await client.upsert_global_concurrency_limit_by_name(name, slots)
    return name


def slot_gate(limited: dict[str, int]) -> Callable[[str], AbstractAsyncContextManager] | None:
    """A per-request gate for the dispatcher: one slot of the endpoint's limit while a request is open."""
    if not limited:
        return None
    names = {url: limit_name(url) for url in limited}

    def gate(url: str) -> AbstractAsyncContextManager:
        name = names.get(url.rstrip("/"))
        if name is None:
            return nullcontext()
        # strict: a limit deleted mid-run is an error, not a silent loss of the cap
        return concurrency(name, occupy=1, strict=True, lease_duration=3600)

    return gate
