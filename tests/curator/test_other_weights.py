"""Verdicts of other weights than the judge's published ones, end to end against the real vLLM (CPU build) serving
the tiny GenRM under the judge's name: `curate judge` files them under a configuration naming the folder, a version
built on them says so on its card, in `curate status --json` and on the dashboard, the Hub path refuses it in one
line before Prefect starts unless --allow-other-weights, and a GPU worker whose server disagrees with its plan
refuses the shard.

Skipped without the vLLM venv (CURATE_TEST_VLLM_PYTHON); the server is the session's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from common.settings import JUDGE_MODEL, Settings, get_settings
from tasks.judge.endpoints import EndpointCheckError, check_judge
from tasks.judge.targets import judge_config_from
from testing.tiny_genrm import write_helpsteer3_rows
from tests.curator.test_refusals import _probe, _refusal
from warehouse.store import Warehouse

pytestmark = [pytest.mark.vllm, pytest.mark.prefect]
CURATE = str(Path(sys.executable).with_name("curate"))
APP = str(Path(__file__).resolve().parents[2] / "curator" / "dashboard" / "app.py")
# the tiny server's context; the tiny GenRM answers in about 50 tokens
SERVED = {"CURATE_JUDGE_MAX_MODEL_LEN": "4096", "CURATE_JUDGE_MAX_TOKENS": "200"}
HUB_DOWN = {"HF_ENDPOINT": "http://127.0.0.1:9", "CURATE_HUB_RETRIES": "0"}  # refuses at once
LOOSE = "min_abs_margin = 0.0\nrequire_order_agreement = false\nrequire_score_agreement = false\n"


def _curate(*args: str, env: dict[str, str], timeout: float = 600) -> dict:
    done = subprocess.run([CURATE, *args, "--json"], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def judged(tiny_genrm_server, tmp_path_factory, new_prefect_home, prefect_server):
    """A warehouse whose pairs the tiny GenRM judged through `curate judge --endpoint`, and a version built on it."""
    place = tmp_path_factory.mktemp("other-weights")
    rows, policy, warehouse = place / "hs.jsonl", place / "loose.toml", place / "w.duckdb"
    write_helpsteer3_rows(rows, 6, seed=29)
    policy.write_text(LOOSE)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")}, **SERVED,
           "PREFECT_HOME": str(new_prefect_home(place / "ph")), "PREFECT_API_URL": prefect_server,
           "CURATE_WAREHOUSE": str(warehouse)}
    _curate("ingest", "--source", "helpsteer3", "--path", str(rows), env=env)
    judge = _curate("judge", "--endpoint", tiny_genrm_server.url, env=env)
    version = _curate("build-version", "tiny", "--policy", str(policy), env=env)
    return place, warehouse, env, judge, version


def test_the_verdicts_are_filed_under_a_configuration_that_names_the_weights(judged, tiny_genrm_server):
    _, warehouse, _, judge, _ = judged
    weights = str(tiny_genrm_server.model_dir)
    assert judge["pairs"] == 6 and judge["judged"] >= 6 and judge["served_models"] == [JUDGE_MODEL]
    assert judge["weights"] == weights and not judge["simulated"]
    with Warehouse(warehouse, read_only=True) as wh:
        assert wh.judging.judge_config(judge["judge_config_id"])["weights"] == weights
    # the same server, taken for the published weights, would be another configuration: the cache of the real
    # judge never answers with these verdicts, nor these with the real judge's
    settings = Settings(**{k.removeprefix("CURATE_").lower(): v for k, v in SERVED.items()})
    config = judge_config_from(settings, check_judge([tiny_genrm_server.url], settings))
    assert config.id == judge["judge_config_id"] and replace(config, weights="").id != config.id


def test_a_version_built_on_them_says_so_on_its_card_in_status_and_on_the_dashboard(judged, tiny_genrm_server,
                                                                                     monkeypatch):
    place, warehouse, env, judge, version = judged
    weights = str(tiny_genrm_server.model_dir)
    assert version["judge_weights"] == weights and version["stats"]["judge_weights"] == weights
    status = _curate("status", env=env)
    (config,) = [j for j in status["judging"] if j["judge_config_id"] == judge["judge_config_id"]]
    assert config["weights"] == weights and config["simulated"] is False
    (v,) = status["versions"]
    assert (v["name"], v["judge_weights"], v["simulated"]) == ("tiny", weights, False)
    plain = subprocess.run([CURATE, "status"], env=env, capture_output=True, text=True, timeout=60)
    assert f"other weights: {weights}" in plain.stdout

    published = _curate("publish", "tiny", "--to", str(place / "published"), env=env)  # a folder takes it
    assert published["judge_weights"] == weights
    card = (Path(published["target"]) / "README.md").read_text()
    body = card.split("---\n", 2)[2]
    assert body.lstrip().startswith("# tiny v1 (judged by other weights)")
    assert body.index(f"loaded `{weights}`, not the published weights of `{JUDGE_MODEL}`") < body.index("Preference")
    assert f'"weights": "{weights}"' in card and "other-weights" in card.split("---\n")[1]

    subprocess.run([CURATE, "snapshot"], env=env, capture_output=True, text=True, timeout=120, check=True)
    monkeypatch.setenv("CURATE_DASHBOARD_SNAPSHOT", str(warehouse.with_name("dashboard.duckdb")))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    banner = next(w.value for w in at.warning if "Other weights" in w.value)
    assert judge["judge_config_id"] in banner and weights in banner
    assert any(m.label == "Judge-human agreement (other weights)" for m in at.metric)
    table = next(t.value for t in at.table if "content hash" in t.value.columns)
    assert table["judge"].tolist() == [f"other weights: {weights}"]


def test_the_hub_refuses_it_in_one_line_before_prefect_starts_unless_allowed(judged, tiny_genrm_server):
    place, warehouse, _, _, _ = judged
    w = ["--warehouse", str(warehouse)]
    line, _ = _refusal("publish", "tiny", "--to", "hf://org/tiny", *w, cwd=place)
    assert line == (f"error: tiny v1 was judged by the weights {tiny_genrm_server.model_dir}, not the judge's "
                    "published ones: not pushing it to hf://org/tiny")
    # allowed: the next check is the Hub's (unreachable here), still before Prefect
    lines, report = _probe("publish", "tiny", "--to", "hf://org/tiny", "--allow-other-weights", *w, cwd=place,
                           settings=HUB_DOWN)
    assert report["flows"] == [] and lines[0].startswith("error: ") and "127.0.0.1:9" in lines[0], lines
    # a run that would build such a version is refused before it starts: its endpoint serves the weights
    run = ["run", "--skip", "ingest", "--endpoint", tiny_genrm_server.url, "--publish-to", "hf://org/tiny", *w]
    line, _ = _refusal(*run, cwd=place, settings=SERVED)
    assert line.startswith(f"error: the judge serves the weights {tiny_genrm_server.model_dir}, not the published")
    lines, report = _probe(*run, "--allow-other-weights", cwd=place, settings={**SERVED, **HUB_DOWN})
    errors = [line for line in lines if line.startswith("error: ")]
    assert report["flows"] == [] and len(errors) == 1 and "127.0.0.1:9" in errors[0], lines


def test_a_gpu_worker_whose_server_loads_other_weights_than_its_plan_refuses_the_shard(judged, tiny_genrm_server,
                                                                                      monkeypatch):
    from flows.judge import judge_worker
    from flows.judge_shards import plan_shards

    place, warehouse, _, _, _ = judged
    for key, value in SERVED.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PREFECT_HOME", str(place / "ph"))
    get_settings.cache_clear()
    try:
        # planned for the published weights: the orchestrator does not see the workers' servers
        plan = plan_shards(str(warehouse), str(place / "exchange"), 1, "single", 1)
        with pytest.raises(EndpointCheckError, match=f"serve the weights {tiny_genrm_server.model_dir} but the plan "
                                                     "is for the published weights"):
            judge_worker(next(iter(plan["work"].values())), endpoints=[tiny_genrm_server.url])
        # planned for these weights (CURATE_JUDGE_WEIGHTS: the servers' root): judged, filed under them
        monkeypatch.setenv("CURATE_JUDGE_WEIGHTS", str(tiny_genrm_server.model_dir))
        get_settings.cache_clear()
        plan = plan_shards(str(warehouse), str(place / "exchange"), 1, "single", 1)
        summary = judge_worker(next(iter(plan["work"].values())), endpoints=[tiny_genrm_server.url])
        assert summary["judged"] == 1 and summary["judge_config_id"] == plan["judge_config_id"]
        with Warehouse(warehouse, read_only=True) as wh:
            assert wh.judging.judge_config(plan["judge_config_id"])["weights"] == str(tiny_genrm_server.model_dir)
    finally:
        get_settings.cache_clear()
