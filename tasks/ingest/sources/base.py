"""What a source is: where its rows live, the pandera schema of a raw row, its adapter, the synthetic rows of its
shape that tests and benchmarks use, and the facts it states about its rows (its license, what its labels mean
and from which |label| one is clear, whether people gave them, whether its pairs name the models that wrote
them): `Source.facts()`, which an ingest stores with the pairs and every later reader reads from the warehouse
(`tasks.ingest.source_facts`).

A new source is one module that builds a `Source` and registers it in `tasks.ingest.sources`: nothing
outside that package knows a source by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandera.pandas as pa

from common.settings import Settings
from tasks.ingest.source_facts import DEFAULT_CLEAR_LABEL, SourceFacts, default_label_meaning
from tasks.ingest.synth_rows import SynthRows

__all__ = ["DEFAULT_CLEAR_LABEL", "Adapter", "AdapterContext", "EvalPrompt", "Source", "one_per_row"]


@dataclass(frozen=True, slots=True)
class AdapterContext:
    settings: Settings
    split: str
    position: str  # where the row was read, for messages: "file.jsonl:17" or "train[17]"


@dataclass(frozen=True, slots=True)
class EvalPrompt:
    """A prompt of an evaluation set: pairs whose prompts overlap it are contaminated."""

    benchmark: str
    benchmark_id: str
    prompt: str


# A raw row -> everything it makes: any number of pairs (pairs sources) or prompts (evaluation sets), and a
# rejection for each part of the row that makes nothing (the reasons become quarantine reasons).
Adapter = Callable[[dict[str, Any], AdapterContext], Iterable[Any]]


@dataclass(frozen=True)
class Source:
    name: str
    hub_id: str
    config: str | None
    splits: tuple[str, ...]
    license: str
    raw_schema: pa.DataFrameSchema
    kind: Literal["pairs", "eval_prompts"]
    adapt: Adapter
    source_id: Callable[[dict[str, Any]], str]  # the raw row's id (a pair made from it may add which parts it pairs)
    description: str = ""
    # |human_label| from which this source's preference is clear (the calibration's evidence, a reviewer's pick)
    clear_label: float = DEFAULT_CLEAR_LABEL
    # its pairs name the models that wrote each answer, under `schemas.pair.MODEL_A` / `MODEL_B` in the metadata
    names_models: bool = False
    # its labels were given by people (False: a model's ratings stand where a person's label would)
    human_labels: bool = True
    # what its labels mean, as stored with its pairs (JSON: scale, direction, clear rule, ties, both-bad); None:
    # the canonical scale with `clear_label` as the clear rule (`tasks.ingest.source_facts.default_label_meaning`)
    label_meaning: dict[str, Any] | None = None
    # a declared source's declaration as read (JSON), stored with its facts; None for a source of the code
    declaration: dict[str, Any] | None = None
    # its synthetic rows (`curate synth NAME`): a `tasks.ingest.synth_rows.SynthRows` class beside its adapter
    synth: type[SynthRows] | None = None
    # top-level fields whose NaN / Infinity the adapter judges part by part (one completion, not the row): the
    # raw stage's row-wide `not_finite:<field>` leaves them to it
    finite_checked_by_adapter: tuple[str, ...] = ()
    # a declared source's (tasks.ingest.declared): the local file its rows live in, read as `--path FILE` is unless
    # another file is given, and the Hub ref pinned on first use (unset: main)
    local_path: Path | None = None
    revision: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def facts(self) -> SourceFacts:
        """What this source says about its labels and rows, as an ingest stores it beside its pairs."""
        meaning = self.label_meaning if self.label_meaning is not None else default_label_meaning(self.clear_label)
        return SourceFacts(name=self.name, clear_label=float(self.clear_label), names_models=self.names_models,
                           human_labels=self.human_labels and self.kind == "pairs", license=self.license,
                           description=self.description, label_meaning=dict(meaning),
                           declaration=dict(self.declaration) if self.declaration is not None else None)


def one_per_row(make: Callable[[dict[str, Any], AdapterContext], Any]) -> Adapter:
    """The adapter of a source whose every row makes exactly one pair (or prompt) or one rejection."""

    def adapt(row: dict[str, Any], ctx: AdapterContext) -> tuple[Any]:
        return (make(row, ctx),)

    adapt.__name__ = adapt.__qualname__ = getattr(make, "__name__", "adapt")
    return adapt
