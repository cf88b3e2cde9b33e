"""The source registry: a name on the command line -> its `Source`, built-in or declared in the sources file
(`tasks.ingest.declared`, docs/sources.md#declared-sources: the settings say which file; a built-in name never reads
it); and what the readers of a warehouse read a pair's source by: the facts stored with its pairs
(`tasks.ingest.source_facts.stored_facts`), this build's only where the warehouse stores none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from common.errors import InvalidInputError, choices
from common.settings import Settings
from tasks.ingest.source_facts import SourceFacts, stored_facts
from tasks.ingest.sources import arena, chatbot_arena, eval_sets, helpsteer3, ultrafeedback
from tasks.ingest.sources.base import AdapterContext, EvalPrompt, Source

if TYPE_CHECKING:
    from warehouse.sources import SourceFactsStore

SOURCES: dict[str, Source] = {
    s.name: s
    for s in (helpsteer3.SOURCE, arena.SOURCE, chatbot_arena.SOURCE, ultrafeedback.SOURCE, *eval_sets.EVAL_SETS)
}
PAIR_SOURCES: tuple[str, ...] = tuple(name for name, s in SOURCES.items() if s.kind == "pairs")


def declared_sources(settings: Settings | None = None) -> Mapping[str, Source]:
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


def known_facts() -> dict[str, SourceFacts]:
    """The facts of every source this build knows, as an ingest of it would record them."""
    return {name: s.facts() for name, s in SOURCES.items()}


def warehouse_facts(store: SourceFactsStore) -> dict[str, SourceFacts]:
    """Every source's facts as the warehouse holds them (this build's where it holds none, else the defaults):
    what the calibration, reviews, the bias audit and the card read a pair's source by."""
    return stored_facts(store, known_facts())


def source_listing(source: Source) -> dict[str, Any]:
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


__all__ = ["PAIR_SOURCES", "SOURCES", "AdapterContext", "EvalPrompt", "Source", "SourceFacts", "all_sources",
           "declared_sources", "get_source", "known_facts", "parse_source", "source_listing", "warehouse_facts"]
