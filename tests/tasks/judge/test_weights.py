"""The served weights are part of the judge's identity: which roots are the judge's published weights, the ids
they leave as they were, what a server that names no root serves, the stand-in known by its root, a GPU worker
whose server disagrees with the plan, and the Hub refusals."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from common.settings import JUDGE_MODEL, Settings
from tasks.judge.config import JudgeConfig
from tasks.judge.endpoints import EndpointCheckError, check_endpoints
from tasks.judge.targets import launched_weights, planned_weights, refuse_unplanned
from tasks.judge.weights import UNKNOWN, is_published_weights, served_weights, weights_words
from tasks.publish.summary import OtherWeightsVersionError, refuse_judging_other_weights, refuse_other_weights
from testing.genrm_standin import StandinConfig, StandinProcess
from tests.tasks.judge.hostile_judge import HostileJudge

NAME = JUDGE_MODEL.split("/")[1]


@pytest.mark.parametrize("root", [
    JUDGE_MODEL,  # vLLM --model nvidia/...: from the Hub or its cache, by id
    JUDGE_MODEL.upper(),  # the Hub resolves ids without regard to case
    f"{JUDGE_MODEL}/",
    f"/root/.cache/huggingface/hub/models--nvidia--{NAME}/snapshots/0123abc",  # the Hub cache, by path
    f"/models/{NAME}",  # hf download ... --local-dir /models/NAME
    f"/models/{NAME}/",
    f"/mnt/mirror/{JUDGE_MODEL}",
    f"./{NAME}", f"~/models/{NAME}", f"s3://bucket/weights/{JUDGE_MODEL}", f"models/mirror/{NAME}", NAME,
])
def test_the_published_weights_by_id_cache_or_mirror(root):
    assert is_published_weights(root, JUDGE_MODEL) and served_weights(root, JUDGE_MODEL) == ""


@pytest.mark.parametrize("root", [
    "/work/tiny-genrm/tiny-genrm-6c1f",  # the tests' tiny model, served under the judge's name
    f"unsloth/{NAME}",  # a Hub id of another repository with the same name: not a folder
    f"mirror/{NAME}",  # two parts without a leading / read as a Hub id
    f"/models/{NAME}-FP8",  # a quantised copy: other verdicts
    f"/models/{NAME}-ft/checkpoint-500",
    "Qwen/Qwen3-8B", "nvidia", "/", f"/root/.cache/huggingface/hub/models--unsloth--{NAME}/snapshots/0123abc",
])
def test_anything_else_is_other_weights_named_by_the_root(root):
    assert not is_published_weights(root, JUDGE_MODEL)
    assert served_weights(f"  {root} ", JUDGE_MODEL) == root.strip()


@pytest.mark.parametrize("root", [None, "", "   ", 7])
def test_no_root_is_unknown_weights(root):
    assert served_weights(root, JUDGE_MODEL) == UNKNOWN
    assert "no root" in weights_words(UNKNOWN)


def test_the_published_weights_leave_every_id_as_it_was_and_other_weights_change_it():
    # the ids before the weights were part of the configuration (caches keyed by them stay valid)
    assert JudgeConfig().id == JudgeConfig(weights="").id == "jc-562a3c403e151f50"
    assert JudgeConfig(simulated=True).id == "jc-3da403103b67af06"
    assert JudgeConfig(template="tpl-x").id == "jc-ce609a1087aad01a"
    tiny, other = JudgeConfig(weights="/work/tiny"), JudgeConfig(weights="/work/tiny2")
    assert len({JudgeConfig().id, tiny.id, other.id, JudgeConfig(weights=UNKNOWN).id}) == 4
    assert tiny.id == JudgeConfig(weights="/work/tiny").id  # stable


def test_a_vllm_launch_serves_its_model_path_as_the_root():
    config = JudgeConfig()
    assert launched_weights(Settings(), config) == ""  # --model nvidia/...: the published weights
    assert launched_weights(Settings(vllm_model_path="/work/tiny-genrm/t"), config) == "/work/tiny-genrm/t"
    assert launched_weights(Settings(vllm_model_path=f"/models/{NAME}"), config) == ""


def test_a_sharded_plan_reads_curate_judge_weights_by_the_same_rule():
    assert planned_weights(Settings()) == ""
    assert planned_weights(Settings(judge_weights="/work/tiny-genrm/t")) == "/work/tiny-genrm/t"
    assert planned_weights(Settings(judge_weights=f"/models/{NAME}")) == ""  # a mirror: what its workers report


class _Models(BaseHTTPRequestHandler):
    """/v1/models as a server that answers with the judge's name and no root (not vLLM: a proxy, say)."""

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": JUDGE_MODEL, "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def rootless():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_names_no_root_is_filed_under_unknown_weights(rootless):
    report = check_endpoints([rootless], JUDGE_MODEL, timeout=5, probe_templates=False)
    assert report.usable == [rootless] and report.weights == UNKNOWN and not report.simulated


def test_the_stand_in_is_simulated_by_its_root_even_under_the_judges_name():
    with StandinProcess(StandinConfig(model=JUDGE_MODEL, latency_mean=0.001)) as server:
        report = check_endpoints([server.url], JUDGE_MODEL, timeout=5, probe_templates=False)
    assert report.simulated and report.weights == ""  # SIMULATED files it apart; its id stays the stand-in's


def test_endpoints_that_serve_different_weights_are_not_mixed(rootless):
    with HostileJudge(["ok"]) as published:  # root: the judge's id
        assert check_endpoints([published.url], JUDGE_MODEL, timeout=5, probe_templates=False).weights == ""
        with pytest.raises(EndpointCheckError) as err:
            check_endpoints([published.url, rootless], JUDGE_MODEL, timeout=5, probe_templates=False)
    assert str(err.value).startswith("the endpoints serve different weights: ")
    assert f"{published.url} (the published weights of {JUDGE_MODEL})" in str(err.value)
    assert f"{rootless} (weights it does not name" in str(err.value)


def test_a_worker_whose_server_loads_other_weights_than_the_plan_refuses_the_shard():
    planned, tiny = JudgeConfig(template="tpl-a"), JudgeConfig(template="tpl-a", weights="/work/tiny")
    with pytest.raises(EndpointCheckError) as err:
        refuse_unplanned(planned, tiny)
    assert "serve the weights /work/tiny but the plan is for the published weights of" in str(err.value)
    assert "CURATE_JUDGE_WEIGHTS" in err.value.hint
    with pytest.raises(EndpointCheckError, match="plan is for the weights /work/tiny"):
        refuse_unplanned(tiny, planned)
    with pytest.raises(EndpointCheckError, match="plan is for the weights /work/tiny"):
        refuse_unplanned(tiny, JudgeConfig(template="tpl-a", weights="/elsewhere/tiny"))
    refuse_unplanned(tiny, tiny)  # the plan names these weights (CURATE_JUDGE_WEIGHTS): judged
    refuse_unplanned(planned, planned)


def test_the_hub_refuses_other_weights_unless_allowed_and_a_folder_takes_them():
    meta = {"name": "prefs", "version": 2, "judge_weights": "/work/tiny"}
    with pytest.raises(OtherWeightsVersionError) as err:
        refuse_other_weights(meta, "hf://org/prefs", False)
    assert str(err.value) == ("prefs v2 was judged by the weights /work/tiny, not the judge's published ones: not "
                              "pushing it to hf://org/prefs")
    assert "--allow-other-weights" in err.value.hint
    refuse_other_weights(meta, "hf://org/prefs", True)
    refuse_other_weights({**meta, "judge_weights": None}, "hf://org/prefs", False)
    with pytest.raises(OtherWeightsVersionError, match="serves the weights /work/tiny, not the published"):
        refuse_judging_other_weights("/work/tiny", JUDGE_MODEL, "hf://org/prefs", False)
    refuse_judging_other_weights("/work/tiny", JUDGE_MODEL, "hf://org/prefs", True)
    refuse_judging_other_weights("/work/tiny", JUDGE_MODEL, "published", False)  # a local folder
    refuse_judging_other_weights("/work/tiny", JUDGE_MODEL, None, False)  # no publishing
    refuse_judging_other_weights("", JUDGE_MODEL, "hf://org/prefs", False)
