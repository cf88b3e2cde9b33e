"""The source registry: a name on the command line -> its `Source`; and what the readers of a warehouse read a
pair's source by: the facts stored with its pairs (`tasks.ingest.source_facts.stored_facts`), this build's only where the warehouse
stores none."""

from __future__ import annotations

from typing import TYPE_CHECKING

from common.errors import InvalidInputError, choices
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


def get_source(name: str, kind: str | None = None) -> Source:
    """The source called `name`; with `kind`, refused unless it is of that kind (pairs or eval_prompts)."""
    try:
        source = SOURCES[name]
    except KeyError:
        raise InvalidInputError(f"unknown source {name!r}; known: {', '.join(sorted(SOURCES))}") from None
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


def parse_source(spec: str) -> tuple[str, str | None]:
    """'helpsteer3' (the Hub) or 'helpsteer3=path/to/file.jsonl' (a local file), as `curate run --source` takes it."""
    name, _, path = spec.partition("=")
    return name.strip(), (path.strip() or None)


__all__ = ["PAIR_SOURCES", "SOURCES", "AdapterContext", "EvalPrompt", "Source", "SourceFacts", "get_source",
           "known_facts", "parse_source", "warehouse_facts"]
