"""The source registry: a name on the command line -> its `Source`, and the facts a source declares, read by
name wherever a pair's source is all that is known (the calibration, human reviews)."""

from __future__ import annotations

from common.errors import InvalidInputError, choices
from tasks.ingest.sources import arena, chatbot_arena, eval_sets, helpsteer3, ultrafeedback
from tasks.ingest.sources.base import DEFAULT_CLEAR_LABEL, AdapterContext, EvalPrompt, Source

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


def clear_label_of(name: str) -> float:
    """|human_label| from which a pair of source `name` carries a clear preference; a source this build does not
    know (a warehouse written by another) counts as one step of the scale."""
    source = SOURCES.get(name)
    return source.clear_label if source is not None else DEFAULT_CLEAR_LABEL


def parse_source(spec: str) -> tuple[str, str | None]:
    """'helpsteer3' (the Hub) or 'helpsteer3=path/to/file.jsonl' (a local file), as `curate run --source` takes it."""
    name, _, path = spec.partition("=")
    return name.strip(), (path.strip() or None)


__all__ = ["PAIR_SOURCES", "SOURCES", "AdapterContext", "EvalPrompt", "Source", "clear_label_of", "get_source",
           "parse_source"]
