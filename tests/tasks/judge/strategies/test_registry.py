"""One way to read a strategy from its text, and a registry whose every entry keeps the contract."""

import pytest

from common.settings import Settings
from tasks.judge.strategies import STRATEGIES, Strategy, names, parse_strategy, usage


def test_names_and_k_read_as_the_flags_write_them():
    assert parse_strategy("single").label == "single" and parse_strategy(" SWAP ").label == "swap"
    assert parse_strategy("samples").label == "samples:1" and parse_strategy("samples:3").label == "samples:3"
    assert parse_strategy("adaptive").label == "adaptive:1" and parse_strategy("Adaptive:2").label == "adaptive:2"


@pytest.mark.parametrize("bad", ["both", "", "samples:0", "samples:x", "samples:", "single:2", "swap:1", "adaptive:-1"])
def test_what_is_not_a_strategy_is_refused_naming_the_ones_that_are(bad):
    with pytest.raises(ValueError, match="unknown strategy|at least 1") as info:
        parse_strategy(bad)
    if "unknown" in str(info.value):
        assert str(info.value).endswith(f"use {usage()}")  # every registered strategy, as the flags write it


def test_the_settings_supply_tunables():
    assert parse_strategy("adaptive", Settings(judge_adaptive_margin=0.5)).borderline_margin == 0.5
    assert parse_strategy("adaptive").borderline_margin == 1.0  # no settings: the default


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_registered_strategy_keeps_the_contract(name):
    for text in (name, f"{name}:3") if STRATEGIES[name].takes_k else (name,):
        s = parse_strategy(text)
        assert isinstance(s, Strategy) and isinstance(s.one_order_on_purpose, bool)
        assert parse_strategy(s.label) == s  # the label a run records reads back as the same strategy
        slots = s.all_slots()
        assert s.initial() and set(s.initial()) <= set(slots) and len(set(slots)) == len(slots)
        assert all(order in ("ab", "ba") and sample >= 0 for order, sample in slots)
        assert s.follow_ups({}) == [] or set(s.follow_ups({})) <= set(slots)
        assert s.asks_follow_ups == (set(slots) != set(s.initial()))
        hash(s)  # frozen: a run's context holds it


def test_usage_and_names_follow_the_registry():
    assert names()[:4] == ["single", "swap", "samples", "adaptive"]  # the order the flags' help lists them in
    assert "adaptive" in names(follow_ups=True) and names(follow_ups=False)[:3] == ["single", "swap", "samples"]
    assert sorted(names(follow_ups=True) + names(follow_ups=False)) == sorted(names())
    assert usage(sep=" | ").startswith("single | swap | samples:K | adaptive[:K]")
    assert usage(["single", "swap", "samples"]) == "single, swap or samples:K" and usage(["swap"]) == "swap"
    assert usage(names()[:4]) == "single, swap, samples:K or adaptive[:K]"
