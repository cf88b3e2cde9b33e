"""A judge run's context is checked when it is made, whichever way it is made."""

import pytest

from common.settings import Settings
from tasks.judge.config import JudgeConfig
from tasks.judge.context import JudgeRun
from tasks.judge.strategies import parse_strategy

URL = "http://127.0.0.1:9/v1"


def _run(**given) -> JudgeRun:
    return JudgeRun.of(given.pop("settings", Settings()), config=JudgeConfig(), run_id=given.pop("run_id", "run-1"),
                       **given)


def test_a_run_reads_its_strategy_from_text_or_the_settings_default():
    assert _run(strategy="adaptive:2").strategy == parse_strategy("adaptive:2")
    assert _run(settings=Settings(judge_strategy="single")).strategy.label == "single"
    tuned = _run(settings=Settings(judge_adaptive_margin=0.5), strategy="adaptive")
    assert tuned.strategy.borderline_margin == 0.5


def test_the_start_record_says_what_the_strategy_declares():
    run = _run(strategy="adaptive", targets=[URL], shard="1/2")
    assert run.targets == (URL,) and run.max_attempts == Settings().judge_max_attempts
    assert run.start_record() == {"config_id": JudgeConfig().id, "strategy": "adaptive:1", "endpoints": [URL],
                                  "shard": "1/2", "one_order_on_purpose": True}
    assert _run(strategy="swap").start_record()["one_order_on_purpose"] is False


def test_served_by_keeps_the_run_and_takes_what_the_preflight_found():
    run = _run(strategy="swap", targets=[URL, "http://127.0.0.1:10/v1"], limit=5)
    served = run.served_by([URL], JudgeConfig(simulated=True))
    assert served.targets == (URL,) and served.config.simulated and (served.strategy, served.limit) == (run.strategy, 5)
    with pytest.raises(Exception):
        served.run_id = "other"  # frozen


@pytest.mark.parametrize("given, message", [
    ({"strategy": "both"}, "unknown strategy"),
    ({"shard": "2/2"}, "shard"),
    ({"limit": 0}, "limit must be"),
    ({"limit": True}, "limit must be"),
    ({"run_id": " "}, "run id"),
    ({"targets": [""]}, "endpoints must be URLs"),
])
def test_a_bad_value_is_refused_when_the_run_is_made(given, message):
    with pytest.raises(ValueError, match=message):
        _run(**given)


def test_the_parts_are_checked_however_the_run_is_made():
    with pytest.raises(ValueError, match="needs a strategy"):
        JudgeRun(Settings(), JudgeConfig(), "swap", "run-1")  # text where a strategy belongs
    with pytest.raises(ValueError, match="judge configuration"):
        JudgeRun(Settings(), {"model": "m"}, parse_strategy("swap"), "run-1")
