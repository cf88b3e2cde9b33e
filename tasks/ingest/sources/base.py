"""What a source is: where its rows live, the pandera schema of a raw row, and its adapter.

A new arena-style source is one small module that builds a `Source` and registers it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pandera.pandas as pa

from common.settings import Settings


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


@dataclass(frozen=True)
class Source:
    name: str
    hub_id: str
    config: str | None
    splits: tuple[str, ...]
    license: str
    raw_schema: pa.DataFrameSchema
    kind: Literal["pairs", "eval_prompts"]
    # pairs: raw row -> pair or rejection; eval_prompts: raw row -> prompt or rejection
    adapt: Callable[[dict[str, Any], AdapterContext], Any]
    source_id: Callable[[dict[str, Any]], str]
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

