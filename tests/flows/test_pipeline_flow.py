"""The whole pipeline on the ephemeral API with a stand-in judge: a first run, then an incremental one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prefect.artifacts import Artifact

from flows.pipeline import curate_pipeline, parse_source
from tasks.ingest.synth import write_synth
from testing.genrm_standin import StandinConfig, StandinProcess
from warehouse.store import Warehouse

pytestmark = pytest.mark.prefect


def test_parse_source():
    assert parse_source("helpsteer3") == ("helpsteer3", None)
    assert parse_source("arena=data/a.jsonl") == ("arena", "data/a.jsonl")


def test_first_run_publishes_and_a_rerun_on_unchanged_sources_makes_nothing_new(tmp_path, warehouse_path):
    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 80, seed=41, pair_bytes=500, bad_rate=0.0)
    out = tmp_path / "published"
    with StandinProcess(StandinConfig(latency_mean=0.005)) as server:
        first = curate_pipeline(sources=[f"helpsteer3={data}"], endpoints=[server.url], dataset="nightly", publish_to=str(out),
                                warehouse=str(warehouse_path))
        requests_after_first = server.stats()["requests"]
        second = curate_pipeline(sources=[f"helpsteer3={data}"], endpoints=[server.url], dataset="nightly", publish_to=str(out),
                                 warehouse=str(warehouse_path))
        assert server.stats()["requests"] == requests_after_first  # 0 judge calls on unchanged sources
    assert first["ingest"]["helpsteer3"]["new_pairs"] > 0 and first["judge"]["judged"] > 0
    assert first["version"]["new_version"] and first["publish"]["published"]
    # rows `curate synth` wrote: the ingest says so, and the card says it first
    assert first["ingest"]["helpsteer3"]["synthetic"] is True
    card = (Path(first["publish"]["target"]) / "README.md").read_text()
    assert card.split("---\n", 2)[2].lstrip().split("\n\n")[1].startswith("> **SYNTHETIC ROWS.** All of its rows")
    assert second["ingest"]["helpsteer3"]["new_pairs"] == 0 and second["judge"]["requests"] == 0
    assert not second["version"]["new_version"] and "unchanged" in second["version"]["note"]
    assert second["publish"]["already_published"]
    with Warehouse(warehouse_path, read_only=True) as wh:
        assert [v["version"] for v in wh.versions.versions("nightly")] == [1]
        runs = len(wh.query("SELECT * FROM dash_runs"))
    # the dashboard's snapshot followed: refreshed after the rerun too (its runs are there)
    from curator.dashboard import data
    from warehouse.snapshot import snapshot_path

    snap = data.Snapshot.open(snapshot_path(warehouse_path))
    assert snap.info["stage"] == "publish" and len(data.runs(snap)) == runs


def test_a_run_leaves_its_funnel_failures_and_a_link_as_artifacts(tmp_path, warehouse_path):
    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 60, seed=42, pair_bytes=500, bad_rate=0.1)
    out = tmp_path / "published"
    with StandinProcess(StandinConfig(latency_mean=0.005, malformed_rate=0.1)) as server:
        s = curate_pipeline(sources=[f"helpsteer3={data}"], endpoints=[server.url], dataset="reported", publish_to=str(out),
                            warehouse=str(warehouse_path))
    funnel = json.loads(Artifact.get("pipeline-funnel").data)
    ingest, version = s["ingest"]["helpsteer3"], s["version"]
    assert funnel == [{"source": "helpsteer3", "read": ingest["read"], "valid": ingest["valid"],
                       "unique (new)": ingest["new_pairs"], "judged (in warehouse)": funnel[0]["judged (in warehouse)"],
                       "kept in version": version["stats"]["by_source"]["helpsteer3"]}]
    assert ingest["read"] > ingest["valid"] and 0 < funnel[0]["kept in version"] <= funnel[0]["judged (in warehouse)"] <= ingest["new_pairs"]
    failures = json.loads(Artifact.get("pipeline-judge-failures").data)
    assert failures == [{"reason": k, "judgments": v} for k, v in s["judge"]["failed"].items()] and failures
    link = Artifact.get("pipeline-published")
    assert link.data.startswith("[reported v1](file://") and s["publish"]["target"] in link.data
    report = Artifact.get("pipeline-report").data
    assert f"tokens in/out {s['judge']['tokens_in']}/{s['judge']['tokens_out']}" in report


def test_stages_can_be_skipped_and_unknown_ones_are_refused(warehouse_path):
    with pytest.raises(ValueError, match="unknown stage"):
        curate_pipeline(skip=["judging"], warehouse=str(warehouse_path))
    result = curate_pipeline(skip=["ingest", "judge", "version", "publish"], warehouse=str(warehouse_path))
    assert result == {"ingest": {}, "judge": None, "version": None, "publish": None, "failed": []}


def test_the_judge_stage_runs_the_judge_ladder_with_a_reward_model(tmp_path, warehouse_path):
    """`rm_endpoints` with `strategy: ladder`: the reward model scores every pair first, the GenRM only the pairs
    its scores leave unsure, each judge's measured GPU-seconds in the judge stage's summary (SIMULATED stand-ins)."""
    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 600, seed=43, pair_bytes=500, bad_rate=0.0)
    policy = tmp_path / "policy.toml"
    policy.write_text("[policy]\ntarget_agreement = 0.9\n")
    with (StandinProcess(StandinConfig(latency_mean=0.002)) as genrm,
          RewardStandinProcess(RewardStandinConfig(latency_mean=0.0)) as rm):
        s = curate_pipeline(sources=[f"helpsteer3={data}"], endpoints=[genrm.url], rm_endpoints=[rm.url],
                            strategy="ladder", policy_path=str(policy), dataset="laddered", skip=["publish"],
                            warehouse=str(warehouse_path))
        genrm_requests, scored = genrm.stats()["requests"], rm.stats()["scored"]
    judged = s["judge"]
    pairs = s["ingest"]["helpsteer3"]["new_pairs"]
    assert judged["rounds"][0]["judge"] == "reward_model" and judged["reward_model"]["judged"] == pairs
    assert scored == 2 * pairs and genrm_requests == judged["cost"]["by_judge"]["genrm"]["requests"] < 2 * pairs
    assert set(judged["cost"]["by_judge"]) == {"genrm", "reward_model"}


def test_a_nightly_ladder_can_stop_after_the_reward_models_rung_and_the_next_run_goes_on(tmp_path, warehouse_path):
    """`reward_model_only`: the judge stage scores the reward model's rung and stops; no version is built and
    nothing is published, and that is not a failure. The next run without it asks the GenRM, builds the version
    and pays the reward model nothing twice."""
    from tasks.judge.ladder import REWARD_MODEL_ONLY
    from testing.reward_model_standin import RewardStandinConfig, RewardStandinProcess

    data = tmp_path / "hs.jsonl"
    write_synth(data, "helpsteer3", 600, seed=44, pair_bytes=500, bad_rate=0.0)
    policy = tmp_path / "policy.toml"
    policy.write_text("[policy]\ntarget_agreement = 0.9\n")
    out = tmp_path / "published"
    given = {"sources": [f"helpsteer3={data}"], "strategy": "ladder", "policy_path": str(policy),
             "dataset": "laddered", "publish_to": str(out), "warehouse": str(warehouse_path)}
    with (StandinProcess(StandinConfig(latency_mean=0.002)) as genrm,
          RewardStandinProcess(RewardStandinConfig(latency_mean=0.0)) as rm):
        alone = curate_pipeline(**given, endpoints=[genrm.url], rm_endpoints=[rm.url], reward_model_only=True)
        assert genrm.stats()["requests"] == 0 and not out.exists()  # nothing published
        scored = rm.stats()["requests"]
        s = curate_pipeline(**given, endpoints=[genrm.url], rm_endpoints=[rm.url])
        assert rm.stats()["requests"] == scored and genrm.stats()["requests"] > 0
    pairs = alone["ingest"]["helpsteer3"]["new_pairs"]
    assert alone["judge"]["rounds_ended"] == REWARD_MODEL_ONLY and alone["judge"]["reward_model"]["judged"] == pairs
    assert (alone["version"], alone["publish"], alone["failed"]) == (None, None, [])
    assert s["failed"] == [] and s["version"]["rows"] > 0 and s["publish"]["target"]
    assert s["judge"]["reward_model"]["requests"] == 0 and s["judge"]["rounds_ended"] != REWARD_MODEL_ONLY
