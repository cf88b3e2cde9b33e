"""Flows are called by name: each takes at most its subject by position, the rest by keyword; a run context says
its flow's parameters by name (`flow_parameters`), and the pipeline's parameters are declared once."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import flows
from tasks.curate.context import VersionRun
from tasks.ingest.context import IngestRun
from tasks.pipeline.context import PipelineRun
from tasks.publish.context import PublishRun


def _flows():
    for info in pkgutil.iter_modules(flows.__path__):
        module = importlib.import_module(f"flows.{info.name}")
        for obj in vars(module).values():
            if type(obj).__name__ == "Flow" and obj.fn.__module__ == module.__name__:
                yield obj


def test_every_flow_takes_its_parameters_by_name():
    found = list(_flows())
    assert len(found) >= 10, [f.name for f in found]
    for f in found:
        params = list(inspect.signature(f.fn).parameters.values())
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        assert len(positional) <= 1 and all(p.default is p.empty for p in params if p.name in positional), \
            f"{f.name}: {positional} by position (only its subject may be, and without a default)"


def test_a_run_context_says_its_flow_s_parameters(tmp_path):
    from flows.ingest import ingest
    from flows.publish import publish
    from flows.versions import build_version

    warehouse = str(tmp_path / "w.duckdb")
    cases = [(ingest, IngestRun.of("helpsteer3", path=str(tmp_path / "hs.jsonl"), limit=5, force=True,
                                   warehouse=warehouse, batch_size=100)),
             (build_version, VersionRun.of("set", policy_overrides={"min_abs_margin": 0.5}, judge_config_id="jc-1",
                                           warehouse=warehouse)),
             (publish, PublishRun.of("set", version=2, to="HF://org/set", allow_simulated=True, warehouse=warehouse))]
    for flow, run in cases:
        given = run.flow_parameters()
        assert set(given) == set(inspect.signature(flow.fn).parameters), flow.name
        assert type(run).of(**given) == run, flow.name  # the parameters rebuild the very context


def test_the_pipeline_s_parameters_are_declared_once():
    from flows.pipeline import curate_pipeline

    declared = inspect.signature(PipelineRun.of).parameters
    assert inspect.signature(curate_pipeline.fn).parameters == declared
    schema = curate_pipeline.parameters.model_dump()  # what a deployment's form is made from
    assert list(schema["properties"]) == list(declared)
    assert schema["properties"]["dataset"]["default"] == "preferences"


def test_the_nightly_deployment_s_parameters_take_a_declared_source(tmp_path):
    """prefect.yaml's nightly parameters with a source declared in sources.toml beside the warehouse, as a deployment
    passes them: the run is built, the declared name among its sources, and its file is checked as NAME=FILE's is."""
    from pathlib import Path

    import pytest
    import yaml

    from common.errors import InvalidInputError
    spec = yaml.safe_load((Path(__file__).resolve().parents[2] / "prefect.yaml").read_text())
    nightly = next(d for d in spec["deployments"] if d["name"] == "nightly")["parameters"]
    (tmp_path / "sources.toml").write_text('[sources.team-pairs]\npath = "pairs.jsonl"\nformat = "trl"\n'
                                           'license = "internal"\n')
    (tmp_path / "pairs.jsonl").write_text("".join(f'{{"prompt": "q{i}", "chosen": "c", "rejected": "r"}}\n'
                                                  for i in range(6)))
    given = {**nightly, "sources": [*nightly["sources"], "team-pairs"], "warehouse": str(tmp_path / "w.duckdb")}
    run = PipelineRun.of(**given)
    assert run.sources[-1] == "team-pairs" and run.judge_shards == nightly["judge_shards"]
    run.check_files()  # the declared file is there and of its source
    elsewhere = {**given, "warehouse": str(tmp_path / "other" / "w.duckdb")}
    with pytest.raises(InvalidInputError, match="unknown source 'team-pairs'"):
        PipelineRun.of(**elsewhere)  # no sources.toml beside that warehouse
    assert PipelineRun.of(**elsewhere, sources_file=str(tmp_path / "sources.toml")).sources == given["sources"]


def test_the_judge_flows_parameters_are_declared_once():
    """Each judge flow takes the keywords of `JudgeRun.of` it names, with their defaults; a sharded one takes its
    `shards` first, and must be given them."""
    from flows.judge import judge
    from flows.judge_shards import judge_sharded, judge_sharded_here
    from tasks.judge.context import JudgeRun

    declared = inspect.signature(JudgeRun.of).parameters
    for f in (judge, judge_sharded, judge_sharded_here):
        params = inspect.signature(f.fn).parameters
        assert set(params) <= set(declared), f.name
        for name, p in params.items():
            assert p.default == declared[name].default or name == "shards", (f.name, name)
        assert list(f.parameters.model_dump()["properties"]) == list(params), f.name
    assert "shards" in inspect.signature(judge_sharded.fn).parameters
    assert judge_sharded.parameters.model_dump()["required"] == ["shards"]
    assert {"endpoints", "launch"} <= set(inspect.signature(judge_sharded_here.fn).parameters)
    assert "deployment" not in inspect.signature(judge.fn).parameters
