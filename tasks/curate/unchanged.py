"""A version known to be unchanged without reading a row: the latest version of the name was built from the
same inputs (the judge configuration's verdicts and the pairs they judge, as `version_inputs` fingerprints
them) under the same policy."""

from __future__ import annotations

import json

from schemas.summaries import VersionSummary
from tasks.curate.policy import FilterPolicy
from warehouse.versions import VersionStore


def unchanged_version(store: VersionStore, name: str, config_id: str, policy: FilterPolicy) -> VersionSummary | None:
    """The summary of the latest version of `name` when nothing it is built from has changed, else None."""
    latest = store.latest_version(name)
    if latest is None or latest["inputs"] != store.version_inputs(config_id) \
            or json.loads(latest["policy"]) != policy.model_dump():
        return None
    return {"name": name, "version": latest["version"], "rows": latest["row_count"],
            "content_hash": latest["content_hash"], "created": str(latest["created_at"]), "new_version": False,
            "note": f"unchanged: same inputs and policy as {name} v{latest['version']}"}
