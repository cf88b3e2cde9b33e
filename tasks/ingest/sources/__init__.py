"""The source registry: a name on the command line -> its `Source`."""

from __future__ import annotations

from common.errors import InvalidInputError
from tasks.ingest.sources import arena, chatbot_arena, eval_sets, helpsteer3
from tasks.ingest.sources.base import AdapterContext, EvalPrompt, Source

SOURCES: dict[str, Source] = {
    s.name: s
    for s in (helpsteer3.SOURCE, arena.SOURCE, chatbot_arena.SOURCE, eval_sets.RM_BENCH, eval_sets.JUDGEBENCH)
}


def get_source(name: str, kind: str | None = None) -> Source:
    """The source called `name`; with `kind`, refused unless it is of that kind (pairs or eval_prompts)."""
    try:
        source = SOURCES[name]
    except KeyError:
        raise InvalidInputError(f"unknown source {name!r}; known: {', '.join(sorted(SOURCES))}") from None
    if kind == "pairs" and source.kind != kind:
        raise InvalidInputError(f"{name} is an evaluation set: load it with `curate eval-set load {name}`")
    if kind == "eval_prompts" and source.kind != kind:
        raise InvalidInputError(f"{name} is not an evaluation set (try: rm-bench, judgebench)")
    return source


def parse_source(spec: str) -> tuple[str, str | None]:
    """'helpsteer3' (the Hub) or 'helpsteer3=path/to/file.jsonl' (a local file), as `curate run --source` takes it."""
    name, _, path = spec.partition("=")
    return name.strip(), (path.strip() or None)


__all__ = ["SOURCES", "AdapterContext", "EvalPrompt", "Source", "get_source", "parse_source"]
