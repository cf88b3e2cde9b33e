"""`curate judge`, `curate run` and a deployment make the judge stage's run alike (`JudgeRun.of`, its policy read by
`tasks.curate.policy.in_rounds`), and a bad value is refused once, in one message, before Prefect starts."""

from __future__ import annotations

import pytest
import yaml
from prefect.logging import disable_run_logger
from typer.testing import CliRunner

from common.settings import get_settings
from curator.cli import app
from curator.runner import Runner
from tasks.curate.policy import PolicyError, in_rounds
from tasks.judge.context import JudgeRun
from tasks.pipeline.context import PipelineRun
from warehouse.store import Warehouse

runner = CliRunner()


class Asked(Exception):
    """What `Runner.flow` was given, instead of a flow run."""


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A warehouse, a policy with a target, and the flow the CLI would run, recorded (none is run)."""
    warehouse = tmp_path / "w.duckdb"
    Warehouse(warehouse).close()
    (tmp_path / "targeted.toml").write_text("[policy]\ntarget_agreement = 0.85\n")
    monkeypatch.setenv("CURATE_WAREHOUSE", str(warehouse))  # what the CLI's --warehouse sets, put back after
    get_settings.cache_clear()
    asked: list[tuple[str, dict]] = []

    def flow(self, fn, **parameters):
        asked.append((fn.name, parameters))
        raise Asked

    monkeypatch.setattr(Runner, "flow", flow)
    yield tmp_path, asked
    get_settings.cache_clear()


def test_the_cli_the_pipeline_and_a_deployment_make_the_same_judge_run(place):
    from flows.judge import judge

    tmp_path, asked = place
    warehouse, policy = str(tmp_path / "w.duckdb"), str(tmp_path / "targeted.toml")
    result = runner.invoke(app, ["judge", "--launch-standin", "--strategy", "certify", "--policy", policy,
                                 "--warehouse", warehouse])
    assert isinstance(result.exception, Asked), result.output
    [(name, parameters)] = asked
    assert name == "judge" and parameters["policy_path"] == policy and parameters["strategy"] == "certify:2"
    by_cli = in_rounds(JudgeRun.of(**parameters))  # as the flow makes it from what the CLI passed
    assert by_cli.policy.target_agreement == 0.85
    # the pipeline's judge stage (`curate run`, the nightly deployment's flow) on the same judge
    by_pipeline = PipelineRun.of(launch="standin", strategy="certify", policy_path=policy, skip=["ingest"],
                                 warehouse=warehouse).check_files()
    assert by_pipeline == by_cli
    # a deployment of the judge flow is given the same fields, by name: the flow's parameters are `of`'s
    assert set(by_cli.flow_parameters(judge)) == set(judge.parameters.model_dump()["properties"])
    assert in_rounds(JudgeRun.of(**by_cli.flow_parameters(judge))) == by_cli


def test_the_nightly_deployment_s_judge_run_is_made_as_a_sharded_one(tmp_path):
    from pathlib import Path

    from flows.judge_shards import judge_sharded

    spec = yaml.safe_load((Path(__file__).resolve().parents[3] / "prefect.yaml").read_text())
    nightly = next(d for d in spec["deployments"] if d["name"] == "nightly")["parameters"]
    run = PipelineRun.of(**nightly, skip=["ingest"], warehouse=str(tmp_path / "w.duckdb")).judge_run()
    assert run.shards == nightly["judge_shards"] and run.endpoints is None
    given = run.flow_parameters(judge_sharded)
    assert given["shards"] == nightly["judge_shards"] and "endpoints" not in given
    assert JudgeRun.of(**given) == run


def test_a_bad_target_is_refused_once_in_one_message_before_prefect(place, monkeypatch):
    """Out of its bounds: refused by the policy's field, read once (the CLI's run), the same words as the flow's."""
    from flows.judge import judge
    from tasks.curate import policy as policy_module

    tmp_path, asked = place
    reads = []
    real = policy_module.rounds_policy
    monkeypatch.setattr(policy_module, "rounds_policy", lambda *a: reads.append(a) or real(*a))
    said = "target_agreement = 1.5: input should be less than 1"
    result = runner.invoke(app, ["judge", "--endpoint", "http://127.0.0.1:9/v1", "--strategy", "certify",
                                 "--target-agreement", "1.5", "--warehouse", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2 and said in result.output and result.output.count("\n") == 1, result.output
    assert len(reads) == 1 and asked == []  # read once, and no flow was run
    with disable_run_logger(), pytest.raises(PolicyError) as caught:  # a deployment's parameters: the same words
        judge.fn(endpoints=["http://127.0.0.1:9/v1"], strategy="certify", target_agreement=1.5)
    assert result.output == f"error: {caught.value}\n"


def test_a_target_without_a_strategy_in_rounds_is_refused_by_the_run_alone(place):
    tmp_path, asked = place
    result = runner.invoke(app, ["judge", "--endpoint", "http://127.0.0.1:9/v1", "--target-agreement", "0.9",
                                 "--warehouse", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2 and asked == []
    assert result.output == ("error: --target-agreement applies to a strategy that judges in rounds (certify[:K]), "
                             "not to swap\n")
