"""A publish's summary, and the answer for a version already in its local folder (which writes nothing)."""

from __future__ import annotations

from typing import Any

from schemas.summaries import PublishSummary
from tasks.publish.layout import already_there, list_files, version_folder
from warehouse.store import Warehouse


def publish_summary(meta: dict[str, Any], target: str, tag: str, commit: str | None, files: list[str],
                    already: bool) -> PublishSummary:
    return {"name": meta["name"], "version": meta["version"], "target": target, "tag": tag, "commit": commit,
            "simulated": bool(meta.get("simulated")), "files": files, "published": True,
            "already_published": already, "rows": meta["row_count"], "content_hash": meta["content_hash"]}


def record_if_already_published(wh: Warehouse, name: str, version: int | None, to: str) -> PublishSummary | None:
    """When the version is already in its folder under the local target `to`, record that and return the
    summary; None when there is something to write (or something to refuse: the publish flow says what)."""
    meta = wh.version_meta(name, version)
    if meta is None:
        return None
    final = version_folder(to, meta)
    try:
        if not already_there(final, meta):
            return None
    except Exception:  # noqa: BLE001 - a target to refuse: the flow refuses it with its message
        return None
    tag, target = f"v{meta['version']}", str(final.resolve())
    wh.mark_published(name, meta["version"], target, tag, None)
    return publish_summary(meta, target, tag, None, list_files(final), True)
