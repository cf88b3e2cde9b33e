"""A judge run's context is checked when it is made, whichever way it is made."""

import re

import pytest

from common.settings import Settings
from tasks.judge.config import JudgeConfig
from tasks.judge.context import JudgeRun
from tasks.judge.strategies import parse_strategy

URL = "http://127.0.0.1:9/v1"


def _run(**given) -> JudgeRun:
    return JudgeRun.with_config(given.pop("settings", Settings()), config=JudgeConfig(), run_id=given.pop("run_id", "run-1"),
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


def test_of_is_the_judge_flows_parameters_checked_once(tmp_path):
    """`JudgeRun.of`: the keywords a judge flow takes (a deployment's parameters, the CLI's flags), checked when the
    run is made; its run id is the flow's to give, so two runs asked alike are equal."""
    warehouse = str(tmp_path / "w.duckdb")
    run = JudgeRun.of(endpoints=[URL], strategy="adaptive", limit=5, max_in_flight=4, warehouse=warehouse)
    assert (run.endpoints, run.limit, run.settings.judge_max_in_flight) == ((URL,), 5, 4)
    assert run.config == JudgeConfig(weights=run.config.weights) and run.strategy == parse_strategy("adaptive")
    assert JudgeRun.of(**run.parameters()) == run and run.filed_under("run-9").run_id == "run-9"
    assert not tmp_path.joinpath("w.duckdb").exists()  # nothing is opened


@pytest.mark.parametrize("given, message", [
    ({"shards": 0}, "shards must be a whole number >= 1, not 0"),
    ({"shard": "0/2", "shards": 2}, "--shard judges one hash bucket, --shards splits the run into N"),
    ({"strategy": "certify", "shard": "0/2", "target_agreement": 0.9}, "certify:2 judges in rounds"),
    ({"target_agreement": 0.9}, "--target-agreement applies to a strategy that judges in rounds"),
    ({"port": 70000}, "port must be a whole number 1 .. 65535"),
    ({"max_in_flight": 0}, "judge_max_in_flight = 0"),
    ({"start_timeout": 0}, "start_timeout must be a number of seconds > 0"),
    ({"gpus": 0}, "judge_gpus = 0"),
    ({"budget_gpu_hours": 0}, "judge_budget_gpu_hours = 0"),
    ({"rm_gpus": 2}, "--rm-gpus applies to a judge ladder's reward model"),
    ({"reward_model_only": True}, "--reward-model-only applies to a judge ladder"),
])
def test_of_refuses_a_bad_parameter_in_one_line(given, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        JudgeRun.of(endpoints=[URL], **given)


def test_the_gpus_and_the_budget_are_the_runs_settings_and_its_parameters(tmp_path):
    warehouse = str(tmp_path / "w.duckdb")
    run = JudgeRun.of(endpoints=[URL], strategy="ladder", rm_endpoints=[URL], target_agreement=0.9, gpus=4,
                      rm_gpus=2, budget_gpu_hours=1.5, warehouse=warehouse)
    assert run.settings.gpus_per_server == 4 and run.settings.judge_rm_gpus == 2
    assert run.settings.judge_budget_gpu_hours == 1.5
    given = run.parameters()
    assert (given["gpus"], given["rm_gpus"], given["budget_gpu_hours"]) == (4, 2, 1.5)
    assert JudgeRun.of(**given) == run
    alone = JudgeRun.of(**{**given, "reward_model_only": True})  # a ladder stopped after its reward model's rung
    assert alone.reward_model_only and JudgeRun.of(**alone.parameters()) == alone != run
    # judged in shards too: the coordinator checks the budget before each plan, and scores a ladder's rung 0
    sharded = JudgeRun.of(**{**given, "shards": 2})
    assert sharded.shards == 2 and sharded.settings.judge_budget_gpu_hours == 1.5 and sharded.rm_targets == (URL,)
    # and stopped after its rung, scored by the coordinator before any shard is planned
    assert JudgeRun.of(**{**given, "shards": 2, "reward_model_only": True}).reward_model_only
    plain = JudgeRun.of(endpoints=[URL], warehouse=warehouse)
    assert plain.settings.gpus_per_server == plain.settings.vllm_tensor_parallel_size * \
        plain.settings.vllm_data_parallel_size and plain.parameters()["budget_gpu_hours"] is None
