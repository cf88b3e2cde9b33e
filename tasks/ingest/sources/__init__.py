"""The source registry: a name on the command line -> its `Source`, and the facts a source declares, read by
name wherever a pair's source is all that is known (the calibration, human reviews, a dataset card). A name is a
built-in source's, or one the sources file declares (`tasks.ingest.declared`, docs/sources.md#declared-sources):
the settings say which file; a built-in name never reads it."""

from __future__ import annotations

from typing import Any

from common.errors import InvalidInputError, choices
from common.settings import Settings
from tasks.ingest.sources import arena, chatbot_arena, eval_sets, helpsteer3, ultrafeedback
from tasks.ingest.sources.base import DEFAULT_CLEAR_LABEL, AdapterContext, EvalPrompt, Source

SOURCES: dict[str, Source] = {
    s.name: s
    for s in (helpsteer3.SOURCE, arena.SOURCE, chatbot_arena.SOURCE, ultrafeedback.SOURCE, *eval_sets.EVAL_SETS)
}
PAIR_SOURCES: tuple[str, ...] = tuple(name for name, s in SOURCES.items() if s.kind == "pairs")


def declared_sources(settings: Settings | None = None) -> dict[str, Source]:
    """The sources the settings' sources file declares ({} when there is none)."""
    from tasks.ingest.declared.registry import declared_sources as declared

    return declared(settings, builtin=SOURCES)


def all_sources(settings: Settings | None = None) -> dict[str, Source]:
    """Every source: the built-in ones, then those the sources file declares."""
    return {**SOURCES, **declared_sources(settings)}


def get_source(name: str, kind: str | None = None, settings: Settings | None = None) -> Source:
    """The source called `name`, built-in or declared in the settings' sources file; with `kind`, refused unless it
    is of that kind (pairs or eval_prompts)."""
    source = SOURCES.get(name)
    if source is None:
        declared = declared_sources(settings)
        source = declared.get(name)
        if source is None:
            known = [*SOURCES, *declared]
            raise InvalidInputError(f"unknown source {name!r}; known: {', '.join(sorted(known))}")
    if kind == "pairs" and source.kind != kind:
        raise InvalidInputError(f"{name} is an evaluation set: load it with `curate eval-set load {name}`")
    if kind == "eval_prompts" and source.kind != kind:
        raise InvalidInputError(f"{name} is not an evaluation set (try: "
                                f"{choices(n for n, s in SOURCES.items() if s.kind == 'eval_prompts')})")
    return source


def _known(name: str) -> Source | None:
    """The source called `name`, or None when neither this build nor the sources file knows it."""
    return SOURCES.get(name) or declared_sources().get(name)


def clear_label_of(name: str) -> float:
    """|human_label| from which a pair of source `name` carries a clear preference; a source this build does not
    know (a warehouse written by another, a declaration since removed) counts as one step of the scale."""
    source = _known(name)
    return source.clear_label if source is not None else DEFAULT_CLEAR_LABEL


def license_of(name: str) -> str | None:
    """The license of source `name`'s rows; None when it is not known."""
    source = _known(name)
    return source.license if source is not None else None


def source_facts(source: Source) -> dict[str, Any]:
    """What `curate sources` says of a source: its name, kind and format (a declared source's; None for a built-in
    one, whose adapter is its own), where its rows live, its license, whether it writes synthetic rows, and where it
    came from (`built-in`, or the sources file that declares it)."""
    from tasks.ingest.declared.source import declaration_of

    decl = declaration_of(source)
    local = source.local_path is not None
    return {"name": source.name, "kind": source.kind, "format": decl.format if decl else None,
            "location": str(source.local_path) if local else f"hf://datasets/{source.hub_id}",
            "config": source.config, "splits": list(source.splits), "revision": source.revision,
            "license": source.license, "synthetic_rows": source.synth is not None,
            "origin": str(decl.origin) if decl else "built-in", "description": source.description}


def parse_source(spec: str) -> tuple[str, str | None]:
    """'helpsteer3' (the Hub) or 'helpsteer3=path/to/file.jsonl' (a local file), as `curate run --source` takes it."""
    name, _, path = spec.partition("=")
    return name.strip(), (path.strip() or None)


__all__ = ["PAIR_SOURCES", "SOURCES", "AdapterContext", "EvalPrompt", "Source", "all_sources", "clear_label_of",
           "declared_sources", "get_source", "license_of", "parse_source", "source_facts"]
