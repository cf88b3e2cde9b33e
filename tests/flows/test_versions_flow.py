"""`build_version` on Prefect's ephemeral API over pairs judged by the stand-in."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from curator.cli import app
from flows.ingest import ingest
from flows.judge import judge
from flows.versions import EmptyVersionError, build_version
from tasks.curate.policy import PolicyError
from tasks.ingest.synth import write_synth
from tasks.judge.standin import StandinConfig, StandinProcess
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    path = tmp_path_factory.mktemp("versions") / "warehouse.duckdb"
    data = path.parent / "hs.jsonl"
    write_synth(data, "helpsteer3", 120, seed=31, pair_bytes=500, bad_rate=0.0)
    ingest("helpsteer3", str(data), warehouse=str(path))
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        judge(endpoints=[server.url], strategy="swap", warehouse=str(path))
    return path


def test_versions_are_deterministic_immutable_and_chained(judged):
    first = build_version("helpful", warehouse=str(judged))
    assert first["new_version"] and first["version"] == 1 and first["rows"] > 0 and first["created"]
    again = build_version("helpful", warehouse=str(judged))
    assert not again["new_version"] and again["version"] == 1 and again["content_hash"] == first["content_hash"]
    assert "unchanged" in again["note"]
    stricter = build_version("helpful", policy_overrides={"min_abs_margin": 2.0}, warehouse=str(judged))
    assert stricter["version"] == 2 and stricter["parent_version"] == 1 and stricter["rows"] < first["rows"]
    with Warehouse(judged, read_only=True) as wh:
        v1 = wh.version_rows("helpful", 1)
        listed = wh.versions("helpful")
    assert len(v1) == first["rows"] and [v["version"] for v in listed] == [1, 2]
    for row in v1:
        assert row["margin"] >= 1.0 and row["orders_agree"] is True and row["chosen"] != row["rejected"]
        assert row["prompt"][-1]["role"] == "user" and row["split"] in ("train", "validation")


def test_empty_result_bad_policy_and_bad_name_are_refused(judged, tmp_path):
    with pytest.raises(EmptyVersionError, match="keeps none"):
        build_version("nothing", judge_config_id="jc-never-used", warehouse=str(judged))  # nothing judged by it
    bad = tmp_path / "p.toml"
    bad.write_text("min_margin = 1\n")
    with pytest.raises(PolicyError, match="unknown key 'min_margin'"):
        build_version("x", policy_path=str(bad), warehouse=str(judged))
    for name in ("../evil", "a/b", "", "x" * 200):
        with pytest.raises(ValueError, match="invalid dataset name"):
            build_version(name, warehouse=str(judged))
    with Warehouse(judged, read_only=True) as wh:
        assert not wh.versions("nothing")


def test_cli_build_version_and_versions_json(judged):
    runner = CliRunner()
    result = runner.invoke(app, ["build-version", "cli-set", "--min-abs-margin", "1.5", "--warehouse", str(judged), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    for key in ("name", "version", "rows", "content_hash", "created"):
        assert key in summary
    listed = runner.invoke(app, ["versions", "cli-set", "--warehouse", str(judged), "--json"])
    assert json.loads(listed.stdout)[0]["content_hash"] == summary["content_hash"]
    bad = runner.invoke(app, ["build-version", "cli-set", "--min-abs-margin", "9", "--warehouse", str(judged)])
    assert bad.exit_code == 2 and "min_abs_margin" in bad.output
