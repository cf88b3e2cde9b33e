"""Evaluation sets whose prompts must not leak into training data: RM-Bench and JudgeBench."""

from __future__ import annotations

from typing import Any

from schemas import raw
from tasks.ingest.sources.base import AdapterContext, EvalPrompt, Source


def rmbench_id(row: dict[str, Any]) -> str:
    # ids repeat across domains (chat and code both start at 8): the domain is part of the key.
    return f"{row.get('domain') or 'unknown'}:{row['id']}"


def rmbench_prompt(row: dict[str, Any], ctx: AdapterContext) -> EvalPrompt:
    return EvalPrompt("rm-bench", rmbench_id(row), row["prompt"])


def judgebench_id(row: dict[str, Any]) -> str:
    return str(row["pair_id"])


def judgebench_prompt(row: dict[str, Any], ctx: AdapterContext) -> EvalPrompt:
    return EvalPrompt("judgebench", judgebench_id(row), row["question"])


RM_BENCH = Source(
    name="rm-bench",
    hub_id="THU-KEG/RM-Bench",
    config=None,
    splits=("train",),
    license="odc-by",
    raw_schema=raw.RM_BENCH,
    kind="eval_prompts",
    adapt=rmbench_prompt,
    source_id=rmbench_id,
    description="RM-Bench prompts (chat, math, code, safety)",
)

JUDGEBENCH = Source(
    name="judgebench",
    hub_id="ScalerLab/JudgeBench",
    config=None,
    splits=("gpt", "claude"),
    license="mit",
    raw_schema=raw.JUDGEBENCH,
    kind="eval_prompts",
    adapt=judgebench_prompt,
    source_id=judgebench_id,
    description="JudgeBench questions (knowledge, reasoning, math, code)",
)
