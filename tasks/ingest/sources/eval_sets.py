"""Evaluation sets whose prompts must not leak into training data: RM-Bench and JudgeBench (each also a judge
benchmark, `tasks.evaluate.benchmarks`, under the same name). A new one is a `Source` here and an entry of
`EVAL_SETS`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandera.pandas as pa

from schemas.raw import text_column
from tasks.ingest.sources.base import AdapterContext, EvalPrompt, Source

RM_BENCH_SCHEMA = pa.DataFrameSchema(
    {"id": pa.Column(None), "prompt": text_column(), "domain": text_column(nullable=True)}, strict=False)
JUDGEBENCH_SCHEMA = pa.DataFrameSchema(
    {"pair_id": text_column(), "question": text_column(), "source": text_column(nullable=True)}, strict=False)


def rmbench_id(row: dict[str, Any]) -> str:
    # ids repeat across domains (chat and code both start at 8): the domain is part of the key.
    return f"{row.get('domain') or 'unknown'}:{row['id']}"


def rmbench_prompts(row: dict[str, Any], ctx: AdapterContext) -> Iterator[EvalPrompt]:
    yield EvalPrompt("rm-bench", rmbench_id(row), row["prompt"])


def judgebench_id(row: dict[str, Any]) -> str:
    return str(row["pair_id"])


def judgebench_prompts(row: dict[str, Any], ctx: AdapterContext) -> Iterator[EvalPrompt]:
    yield EvalPrompt("judgebench", judgebench_id(row), row["question"])


RM_BENCH = Source(
    name="rm-bench",
    hub_id="THU-KEG/RM-Bench",
    config=None,
    splits=("train",),
    license="odc-by",
    raw_schema=RM_BENCH_SCHEMA,
    kind="eval_prompts",
    adapt=rmbench_prompts,
    source_id=rmbench_id,
    description="RM-Bench prompts (chat, math, code, safety)",
)

JUDGEBENCH = Source(
    name="judgebench",
    hub_id="ScalerLab/JudgeBench",
    config=None,
    splits=("gpt", "claude"),
    license="mit",
    raw_schema=JUDGEBENCH_SCHEMA,
    kind="eval_prompts",
    adapt=judgebench_prompts,
    source_id=judgebench_id,
    description="JudgeBench questions (knowledge, reasoning, math, code)",
)

EVAL_SETS = (RM_BENCH, JUDGEBENCH)
