"""The benchmark registry: a benchmark declares its evaluation set, its comparisons, its decision, its report and
the model card's figures on its `Benchmark`; scoring, the flow and the CLI read them there, and nothing outside
a benchmark's own module (and its evaluation set's) knows it by name."""

from __future__ import annotations

import pytest

from common.errors import InvalidInputError
from tasks.evaluate.benchmarks import BENCHMARKS, comparisons, get_benchmark, scoring_plan
from tasks.evaluate.benchmarks.base import MEAN_OF_CATEGORIES, POOLED, Benchmark, Comparison, item_id, mean_margin
from tasks.evaluate.scoring import decide, score
from tests.registry_names import allow, module_of, names_said


def test_every_benchmark_declares_its_facts():
    assert len(BENCHMARKS) >= 2
    for name, b in BENCHMARKS.items():
        assert b.name == name and b.source.name == name and b.source.kind == "eval_prompts"
        assert b.categories and b.overall in (POOLED, MEAN_OF_CATEGORIES) and "overall" in b.model_card
        figures = {"overall", *b.categories, *b.difficulties}
        assert set(b.model_card) <= figures, (name, set(b.model_card) - figures)


def test_an_unknown_benchmark_is_refused_with_the_registry_s_names():
    with pytest.raises(InvalidInputError) as err:
        get_benchmark("arena")
    assert str(err.value).startswith("arena is not a judge benchmark: use ")
    assert all(name in str(err.value) for name in BENCHMARKS)
    with pytest.raises(InvalidInputError, match="not a judge benchmark"):
        scoring_plan("mt-bench", "swap")


def _made_up_row(row: dict) -> list[Comparison]:
    return [Comparison(item_id("made-up", row["id"], k), "made-up", row["topic"], level, f"{level}>x", "p", "a", "b",
                       winner) for k, (level, winner) in enumerate([("low", "A"), ("high", "B")])]


def test_a_benchmark_declared_only_on_its_benchmark_is_scored_as_it_declares(monkeypatch):
    """A made-up benchmark: registered, read and scored by what it declares, no other code told of it."""
    made_up = Benchmark(name="made-up", comparisons=_made_up_row, decide=mean_margin, categories=("x", "y", "z"),
                        model_card={"overall": 50.0, "x": 40.0, "high": 10.0}, overall=MEAN_OF_CATEGORIES,
                        difficulties=("high", "low"), cells=("low>x", "high>x"))
    monkeypatch.setitem(BENCHMARKS, "made-up", made_up)
    items = comparisons("made-up", [{"id": 1, "topic": "x"}, {"id": 2, "topic": "y"}])
    assert len(items) == 4 and scoring_plan("made-up", "single").label == "single"
    # x: both right; y: its "low" item wrong (B wins by the mean), its "high" item a tie
    verdicts = {items[0].item_id: {("ab", 0): 1.0}, items[1].item_id: {("ab", 0): -2.0},
                items[2].item_id: {("ab", 0): -1.0, ("ab", 1): 0.5}, items[3].item_id: {("ab", 0): 0.0}}
    assert decide("made-up", verdicts[items[2].item_id], ["ab"]) == "B"
    s = score("made-up", items, verdicts, ["ab"])
    assert s["by_category"] == {"x": 100.0, "y": 0.0} and s["accuracy"] == 50.0  # the mean of the categories present
    assert s["domains_missing"] == ["z"] and s["outcomes"] == {"correct": 2, "wrong": 1, "tie": 1}
    assert list(s["by_difficulty"].items()) == [("high", 50.0), ("low", 50.0)]  # in the declared order
    assert s["matrix"] == {"x": {"low>x": 100.0, "high>x": 100.0}, "y": {"low>x": 0.0, "high>x": 0.0}}
    assert s["vs_model_card"] == {"overall": 0.0, "x": 60.0, "high": 40.0}
    monkeypatch.setitem(BENCHMARKS, "made-up", Benchmark(name="made-up", comparisons=_made_up_row, decide=mean_margin,
                                                         categories=("x",), model_card={"overall": 1.0}))
    plain = score("made-up", items, verdicts, ["ab"])
    assert plain["accuracy"] == 50.0 and not {"domains_missing", "by_difficulty", "matrix"} & set(plain)


def test_nothing_outside_a_benchmark_s_own_module_names_it():
    """No string of any package is a benchmark's name but in its own module and in its evaluation set's source
    module (which reads its prompts), and the demo's choice of data (`DEMO_*` in curator/): what the flow, the
    scoring, the CLI and the dashboard need of a benchmark, they read through the registry."""
    allowed = allow(*[(module_of(b.comparisons), name) for name, b in BENCHMARKS.items()],
                    *[(module_of(b.source.source_id), name) for name, b in BENCHMARKS.items()])
    assert "tasks/evaluate/benchmarks/rm_bench.py" in allowed
    found = names_said(BENCHMARKS, allowed)
    assert not found, found
