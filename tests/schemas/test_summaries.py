"""Every flow returns a typed summary of `schemas.summaries`, and says so in its annotation; the keys a flow or
the pipeline picks out of a summary by name are keys the summary declares."""

from __future__ import annotations

import importlib
import pkgutil
from typing import get_type_hints, is_typeddict

import pytest
from prefect import Flow

import flows
import schemas.summaries as summaries
from flows.judge import JUDGE_SUMMARY_KEYS
from tasks.ingest.summary import SUMMARY_KEYS
from tasks.judge.exchange_checks import type_problem

SUMMARY_TYPES = {v for v in vars(summaries).values() if is_typeddict(v) and v.__module__ == summaries.__name__}


def _flows() -> list[Flow]:
    found = []
    for info in pkgutil.iter_modules(flows.__path__):
        module = importlib.import_module(f"flows.{info.name}")
        found += [v for v in vars(module).values() if isinstance(v, Flow) and v.fn.__module__ == module.__name__]
    return found


def test_the_flows_are_found():
    names = {f.name for f in _flows()}
    assert {"ingest", "load-eval-set", "judge", "judge-worker", "judge-sharded", "evaluate-judge", "build-version",
            "publish", "curate-pipeline", "review-push", "review-pull", "review-sync"} <= names


@pytest.mark.parametrize("flow", _flows(), ids=lambda f: f.name)
def test_every_flow_returns_a_summary_type(flow):
    returns = get_type_hints(flow.fn)["return"]
    assert returns in SUMMARY_TYPES, f"{flow.name} returns {returns!r}, not a TypedDict of schemas.summaries"


@pytest.mark.parametrize("kind", sorted(SUMMARY_TYPES, key=lambda t: t.__name__), ids=lambda t: t.__name__)
def test_a_key_a_summary_type_does_not_declare_is_named(kind):
    given = {"no_such_key": 1, **{key: None for key in kind.__required_keys__}}
    assert type_problem(given, kind) == f"no_such_key is not a field of a {kind.__name__}"


def test_the_keys_picked_out_of_summaries_by_name_are_declared():
    assert set(JUDGE_SUMMARY_KEYS) <= set(summaries.JudgeSummary.__annotations__)
    assert set(SUMMARY_KEYS) <= set(summaries.IngestSummary.__annotations__)
    assert set(summaries.PipelineSummary.__annotations__) == {"ingest", *summaries.PIPELINE_STAGES[1:], "failed"}
