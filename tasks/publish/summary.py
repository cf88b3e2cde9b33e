"""A publish's summary, the answer for a version already in its local folder (which writes nothing), and what
a publish refuses (a version that does not exist; SIMULATED verdicts, or verdicts of other weights than the
judge's published ones, on their way to the Hub)."""

from __future__ import annotations

from typing import Any

from common.errors import UserError
from schemas.summaries import PublishSummary
from tasks.judge.weights import weights_words
from tasks.publish.layout import already_there, list_files, version_folder
from warehouse.versions import VersionStore


class UnknownVersionError(UserError, LookupError):
    """The version asked for does not exist."""


class RestrictedLicenseError(UserError):
    """A version holding rows of a source whose license does not allow redistribution is not pushed to a public
    Hub repository unless asked."""

    hint = "pass --private, or --allow-restricted-licenses if the licenses allow it after all"


# licenses that do not allow redistribution (`other` does unless it names a link)
RESTRICTED_LICENSES = ("internal", "proprietary", "private", "confidential", "restricted", "other")


def restricted_license(license_: str, declaration: dict[str, Any] | None = None) -> bool:
    """Whether a source's license (or its declaration's `redistribute = false`) forbids publishing its rows."""
    if declaration and declaration.get("redistribute") is False:
        return True
    words = license_.strip().lower()
    if words.startswith("other") and "://" in words:
        return False
    return words.split(":")[0].split()[0] in RESTRICTED_LICENSES if words else False


def restricted_sources(rows: list[dict[str, Any]], facts: dict[str, Any]) -> dict[str, int]:
    """The version's sources whose license forbids publishing, each with its row count (`facts`: each source's
    `tasks.ingest.source_facts.SourceFacts`)."""
    from tasks.ingest.source_facts import ASSUMED, facts_in

    counts: dict[str, int] = {}
    for r in rows:
        counts[r["source"]] = counts.get(r["source"], 0) + 1
    out = {}
    for source, n in counts.items():
        f = facts_in(facts, source)
        if f.origin != ASSUMED and restricted_license(f.license, f.declaration):
            out[source] = n
    return out


def refuse_restricted_licenses(meta: dict[str, Any], to: str, restricted: dict[str, int], private: bool,
                               allow: bool) -> None:
    """The Hub path refuses a public repository for a version with rows of restricted sources (`restricted`:
    each such source's license and row count) unless private or allowed."""
    if restricted and not private and not allow:
        named = ", ".join(f"{s} ({n} rows)" for s, n in sorted(restricted.items()))
        raise RestrictedLicenseError(f"{meta['name']} v{meta['version']} holds rows of sources whose license does "
                                     f"not allow redistribution: {named}; not pushing it to public {to}")


class SimulatedVersionError(UserError):
    """A version judged by the stand-in is not pushed to the Hub unless asked: it would carry false provenance."""

    hint = "pass --allow-simulated to push it anyway (its card says SIMULATED at the top), or judge with the real GenRM"


class OtherWeightsVersionError(UserError):
    """A version judged by other weights than the judge's published ones is not pushed to the Hub unless asked:
    its card would name a judge whose weights did not give its verdicts."""

    hint = ("pass --allow-other-weights to push it anyway (its card names the weights at the top), or judge with "
            "the judge's published weights")


def version_to_publish(store: VersionStore, name: str, version: int | None) -> dict[str, Any]:
    """The version's record (the latest when `version` is None), or the error naming the versions there are."""
    meta = store.version_meta(name, version)
    if meta is None:
        known = [v["version"] for v in store.versions(name)]
        if not known:
            raise UnknownVersionError(f"{name!r} has no versions yet: build one with `curate build-version {name}`")
        raise UnknownVersionError(f"{name!r} has no version {version}: its versions are "
                                  f"{', '.join(f'v{v}' for v in known)} (`curate versions {name}`)")
    return meta


def refuse_simulated(meta: dict[str, Any], to: str, allow_simulated: bool) -> None:
    """The Hub path refuses a version built on the stand-in's SIMULATED verdicts unless allowed."""
    if meta.get("simulated") and not allow_simulated:
        raise SimulatedVersionError(f"{meta['name']} v{meta['version']} was judged by the GenRM stand-in (SIMULATED "
                                    f"verdicts): not pushing it to {to}")


def refuse_other_weights(meta: dict[str, Any], to: str, allow_other_weights: bool) -> None:
    """The Hub path refuses a version built on verdicts of other weights than the judge's unless allowed."""
    if meta.get("judge_weights") and not allow_other_weights:
        raise OtherWeightsVersionError(
            f"{meta['name']} v{meta['version']} was judged by {weights_words(meta['judge_weights'])}, not the judge's "
            f"published ones: not pushing it to {to}")


def refuse_judging_other_weights(weights: str, model: str, to: str | None, allow_other_weights: bool) -> None:
    """A run that will judge with other weights than the judge's published ones (`weights`, as
    `tasks.judge.weights.served_weights` names them) and publish to the Hub is refused before it starts unless
    allowed: the version it builds would be refused at its last stage."""
    if weights and (to or "").startswith("hf://") and not allow_other_weights:
        raise OtherWeightsVersionError(f"the judge serves {weights_words(weights)}, not the published {model}: a "
                                       f"version built on its verdicts would not be pushed to {to}")


def publish_summary(meta: dict[str, Any], target: str, tag: str, commit: str | None, files: list[str],
                    already: bool) -> PublishSummary:
    return {"name": meta["name"], "version": meta["version"], "target": target, "tag": tag, "commit": commit,
            "simulated": bool(meta.get("simulated")), "judge_weights": meta.get("judge_weights"), "files": files,
            "published": True,
            "already_published": already, "rows": meta["row_count"], "content_hash": meta["content_hash"]}


def record_if_already_published(store: VersionStore, name: str, version: int | None, to: str) -> PublishSummary | None:
    """When the version is already in its folder under the local target `to`, record that and return the
    summary; None when there is something to write (or something to refuse: the publish flow says what)."""
    meta = store.version_meta(name, version)
    if meta is None:
        return None
    final = version_folder(to, meta)
    try:
        if not already_there(final, meta):
            return None
    except Exception:  # noqa: BLE001 - a target to refuse: the flow refuses it with its message
        return None
    tag, target = f"v{meta['version']}", str(final.resolve())
    store.mark_published(name, meta["version"], target, tag, None)
    return publish_summary(meta, target, tag, None, list_files(final), True)
