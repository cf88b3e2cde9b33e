"""Each stage's run context is built the same way by the CLI, the flow (its parameters, as a deployment passes
them) and the no-op answer, so a bad value is refused in the same words on every path, before anything is
touched."""

from __future__ import annotations

import pytest
from prefect.logging import disable_run_logger
from pydantic import ValidationError
from typer.testing import CliRunner

from common.errors import InvalidInputError
from common.settings import get_settings
from curator.cli import app
from tasks.curate.context import VersionRun
from tasks.curate.policy import PolicyError
from tasks.ingest.context import IngestRun
from tasks.pipeline.context import PipelineRun
from tasks.publish.context import PublishRun
from tasks.review.context import ReviewPushRun, ReviewSyncRun

runner = CliRunner()


@pytest.fixture(autouse=True)
def fresh_settings():
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _one_line(text: str) -> str:
    """A CLI error as one line of words (typer draws its usage errors in a box)."""
    return " ".join(w for w in text.split() if w not in "│╭╮╰╯─")


def test_the_judge_flow_refuses_max_in_flight_0_as_the_cli_does(warehouse_path):
    from flows.judge import judge

    cli = runner.invoke(app, ["judge", "--max-in-flight", "0", "--endpoint", "http://127.0.0.1:9/v1", "--warehouse",
                              str(warehouse_path)])
    assert cli.exit_code == 2
    assert "Invalid value for '--max-in-flight': Input should be greater than or equal to 1" in _one_line(cli.output)
    with disable_run_logger(), pytest.raises(InvalidInputError) as caught:
        judge.fn(max_in_flight=0, endpoints=["http://127.0.0.1:9/v1"], warehouse=str(warehouse_path))
    assert str(caught.value) == ("invalid settings: judge_max_in_flight = 0: input should be greater than or equal "
                                 "to 1 (allowed: >= 1)")
    assert not warehouse_path.exists()


def test_an_ingest_is_refused_alike_from_the_cli_and_from_a_deployments_parameters(tmp_path, warehouse_path):
    from flows.ingest import ingest

    cli = runner.invoke(app, ["ingest", "--source", "rm-bench", "--warehouse", str(warehouse_path)])
    with disable_run_logger(), pytest.raises(InvalidInputError) as caught:
        ingest.fn("rm-bench", warehouse=str(warehouse_path))
    assert cli.exit_code == 2 and cli.output == f"error: {caught.value}\n"
    # a bound the CLI's flag shares with the context (typer's min comes from IngestRun.limit)
    assert "greater than or equal to 1" in _one_line(runner.invoke(
        app, ["ingest", "--source", "helpsteer3", "--limit", "0", "--warehouse", str(warehouse_path)]).output)
    with disable_run_logger(), pytest.raises(InvalidInputError, match=r"limit = 0: .* \(allowed: >= 1\)"):
        ingest.fn("helpsteer3", path=str(tmp_path / "hs.jsonl"), limit=0, warehouse=str(warehouse_path))
    with disable_run_logger(), pytest.raises(InvalidInputError, match=r"batch_size = 0: .* \(allowed: >= 1\)"):
        ingest.fn("helpsteer3", path=str(tmp_path / "hs.jsonl"), batch_size=0, warehouse=str(warehouse_path))
    assert not warehouse_path.exists()


@pytest.mark.prefect
def test_a_flow_run_under_prefect_fails_on_the_bad_parameter_before_touching_the_warehouse(tmp_path, warehouse_path):
    from flows.ingest import ingest

    with pytest.raises(InvalidInputError, match=r"invalid ingest: limit = -3"):
        ingest("helpsteer3", path=str(tmp_path / "hs.jsonl"), limit=-3, warehouse=str(warehouse_path))
    assert not warehouse_path.exists()


def test_an_environment_value_out_of_bounds_is_one_line_naming_its_variable(monkeypatch, warehouse_path):
    monkeypatch.setenv("CURATE_BATCH_SIZE", "0")
    result = runner.invoke(app, ["ingest", "--source", "helpsteer3", "--warehouse", str(warehouse_path)])
    assert result.exit_code == 2
    assert result.output == ("error: invalid settings: CURATE_BATCH_SIZE = '0': input should be greater than or "
                             "equal to 1 (allowed: >= 1)\n")


def test_an_ingest_context_holds_the_checked_values_and_cannot_change(tmp_path):
    run = IngestRun.of("helpsteer3", path=str(tmp_path / "hs.jsonl"), limit=5, force=True,
                       warehouse=str(tmp_path / "w.duckdb"), batch_size=100)
    assert (run.source, run.path, run.file, run.limit, run.force) == (
        "helpsteer3", tmp_path / "hs.jsonl", str(tmp_path / "hs.jsonl"), 5, True)
    assert (run.batch_size, run.warehouse, run.src.name) == (100, tmp_path / "w.duckdb", "helpsteer3")
    with pytest.raises(ValidationError):
        run.limit = 0  # frozen: what was checked is what runs


def test_the_noop_answers_take_the_context_and_leave_what_they_cannot_answer(tmp_path):
    from curator.noop import ingest_noop, publish_noop

    forced = IngestRun.of("helpsteer3", path=str(tmp_path / "hs.jsonl"), force=True, warehouse=str(tmp_path / "w.duckdb"))
    assert ingest_noop(forced) is None
    assert publish_noop(PublishRun.of("x", to="hf://org/x", warehouse=str(tmp_path / "w.duckdb"))) is None
    assert not (tmp_path / "w.duckdb").exists()


def test_a_version_build_refuses_the_flags_values_before_the_policy_file(tmp_path, warehouse_path):
    from flows.versions import build_version

    missing = tmp_path / "nowhere.toml"
    with pytest.raises(PolicyError, match=r"min_abs_margin = 9"):
        VersionRun.of("helpful", policy_path=missing, policy_overrides={"min_abs_margin": 9})
    with pytest.raises(PolicyError, match="nowhere.toml"):
        VersionRun.of("helpful", policy_path=missing, policy_overrides={"min_abs_margin": 2})
    cli = runner.invoke(app, ["build-version", "helpful", "--decisive-margin", "3", "--warehouse", str(warehouse_path)])
    with disable_run_logger(), pytest.raises(PolicyError) as caught:
        build_version.fn("helpful", policy_overrides={"decisive_margin": 3.0}, warehouse=str(warehouse_path))
    assert cli.exit_code == 2 and cli.output == f"error: {caught.value}\n"
    run = VersionRun.of("helpful", policy_overrides={"rm_margin_column": True, "human_ties": None},
                        judge_config_id="jc-1")
    assert (run.policy.rm_margin_column, run.policy.human_ties, run.judge_config_id) == (True, "keep", "jc-1")
    assert not warehouse_path.exists()


def test_a_publication_checks_its_name_version_and_target(warehouse_path):
    from flows.publish import publish

    assert PublishRun.of("set", version=2, to="hf://org/set").repo == "org/set"
    assert PublishRun.of("set").repo is None
    with pytest.raises(InvalidInputError, match="a Hub target is hf://ORG/NAME"):
        PublishRun.of("set", to="hf://justname")
    cli = runner.invoke(app, ["publish", "set", "0", "--warehouse", str(warehouse_path)])
    assert cli.exit_code == 2 and "greater than or equal to 1" in _one_line(cli.output)
    with disable_run_logger(), pytest.raises(InvalidInputError, match=r"version = 0: .* \(allowed: >= 1\)"):
        publish.fn("set", version=0, warehouse=str(warehouse_path))
    assert not warehouse_path.exists()


@pytest.mark.parametrize("given,said", [
    ({"judge_shards": -1}, "judge_shards = -1: input should be greater than or equal to 0 (allowed: >= 0)"),
    ({"limit": 0}, "limit = 0: input should be greater than or equal to 1 (allowed: >= 1)"),
    ({"stale_seconds": 0.0}, "judge_shard_stale_seconds = 0.0: input should be greater than 0 (allowed: > 0)"),
    ({"sources": ["helpsteer3", "nope"]}, "unknown source 'nope'"),
    ({"skip": ["judging"]}, "unknown stage(s) to skip: ['judging']"),
    ({"dataset": "no spaces"}, "invalid dataset name 'no spaces'"),
    ({"publish_to": "hf://justname"}, "a Hub target is hf://ORG/NAME"),
])
def test_a_pipeline_run_is_refused_before_any_stage(warehouse_path, given, said):
    from flows.pipeline import curate_pipeline

    with pytest.raises(InvalidInputError) as caught:
        curate_pipeline.fn(**{"skip": ["judge"], **given}, warehouse=str(warehouse_path))
    assert said in str(caught.value)
    assert not warehouse_path.exists()  # no lock taken, no ingest begun


def test_a_pipeline_run_reads_its_policy_file_before_any_stage(tmp_path, warehouse_path):
    bad = tmp_path / "policy.toml"
    bad.write_text("min_abs_margin = 7\n")
    run = PipelineRun.of(sources=["helpsteer3"], policy_path=str(bad), warehouse=str(warehouse_path),
                         endpoints=["http://127.0.0.1:9/v1"])
    with pytest.raises(PolicyError, match="min_abs_margin = 7"):
        run.check_files()
    from flows.pipeline import curate_pipeline

    with pytest.raises(PolicyError, match="min_abs_margin = 7"):  # the flow checks it before any stage
        curate_pipeline.fn(sources=["helpsteer3"], policy_path=str(bad), warehouse=str(warehouse_path),
                           endpoints=["http://127.0.0.1:9/v1"])
    run = PipelineRun.of(sources=["helpsteer3=a.jsonl"], skip=["publish"], publish_to="hf://justname", judge_shards=2,
                         warehouse=str(warehouse_path))
    assert (run.skip, run.judge_shards, run.warehouse) == (frozenset({"publish"}), 2, str(warehouse_path))


def test_review_runs_are_checked_before_label_studio_is_asked(warehouse_path):
    from flows.review import review_push, review_sync

    with pytest.raises(InvalidInputError, match=r"audit_limit = -1: .* \(allowed: >= 0\)"):
        review_sync.fn(audit_limit=-1, url="http://127.0.0.1:9", warehouse=str(warehouse_path))
    with pytest.raises(InvalidInputError, match="unknown selection 'random'"):
        review_push.fn("set", selection="random", url="http://127.0.0.1:9", warehouse=str(warehouse_path))
    with pytest.raises(InvalidInputError, match=r"annotators_per_task = 0"):
        ReviewPushRun.of("set", annotators_per_task=0)
    assert ReviewSyncRun.of(limit=0).limit == 0  # a sync that only pulls
    assert not warehouse_path.exists()


def test_a_pipeline_run_takes_a_judge_ladder_and_refuses_a_reward_model_without_one(tmp_path, warehouse_path):
    """`rm_endpoints` reaches the judge stage's run as `curate judge --rm-endpoint` does, and is refused, as there,
    with any strategy but the ladder, and the ladder without one, before any stage."""
    policy = tmp_path / "policy.toml"
    policy.write_text("[policy]\ntarget_agreement = 0.9\n")
    given = {"sources": [], "skip": ["ingest"], "endpoints": ["http://127.0.0.1:9/v1"], "policy_path": str(policy),
             "warehouse": str(warehouse_path)}
    run = PipelineRun.of(**given, strategy="ladder", rm_endpoints=["http://127.0.0.1:10/v1"])
    assert run.judge_run().rm_targets == ("http://127.0.0.1:10/v1",)
    with pytest.raises(InvalidInputError, match="--rm-endpoint applies to --strategy ladder"):
        PipelineRun.of(**given, strategy="swap", rm_endpoints=["http://127.0.0.1:10/v1"]).check_files()
    with pytest.raises(InvalidInputError, match="ladder scores every pair with a reward model first"):
        PipelineRun.of(**given, strategy="ladder").check_files()
    cli = runner.invoke(app, ["run", "--skip", "ingest", "--strategy", "swap", "--endpoint", "http://127.0.0.1:9/v1",
                              "--rm-endpoint", "http://127.0.0.1:10/v1", "--warehouse", str(warehouse_path)])
    assert cli.exit_code == 2 and "--rm-endpoint applies to --strategy ladder" in _one_line(cli.output)
    # stopped after the reward model's rung: a ladder's judge stage only
    alone = PipelineRun.of(**given, strategy="ladder", rm_endpoints=["http://127.0.0.1:10/v1"], reward_model_only=True)
    assert alone.judge_run().reward_model_only
    for wrong in ({"strategy": "ladder"}, {"strategy": "ladder", "rm_endpoints": ["http://127.0.0.1:10/v1"],
                                           "skip": ["ingest", "judge"]}):
        with pytest.raises(InvalidInputError, match="--reward-model-only applies to a judge ladder's judge stage"):
            PipelineRun.of(**{**given, **wrong}, reward_model_only=True)
    cli = runner.invoke(app, ["run", "--skip", "ingest", "--endpoint", "http://127.0.0.1:9/v1", "--reward-model-only",
                              "--warehouse", str(warehouse_path)])
    assert cli.exit_code == 2 and "--reward-model-only applies to a judge ladder" in _one_line(cli.output)
    assert not warehouse_path.exists()
