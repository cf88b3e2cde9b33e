"""The reward-model kind against the real vLLM server (CPU build) serving a tiny sequence-classification model with
`--runner pooling` (testing/tiny_reward_model.py), beside the tiny GenRM: each kind's preflight takes its own
server and refuses the other's before any request, and a ladder judged through the CLI scores every pair on the
reward model with the raw score (no activation) of exactly the tokens the server's template renders.

Skipped without the vLLM venv (CURATE_TEST_VLLM_PYTHON, set by .ci/run); the servers are the session's."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from common.settings import JUDGE_MODEL
from tasks.judge.endpoints import EndpointCheckError, check_endpoints
from tasks.judge.kinds import GENRM, REWARD_MODEL
from tasks.judge.kinds.reward_model import conversation
from testing.tiny_genrm import write_helpsteer3_rows
from tests.real_vllm import RM_SERVED_NAME
from warehouse.store import Warehouse

pytestmark = pytest.mark.vllm
CURATE = str(Path(sys.executable).with_name("curate"))
PAIRS = 10


def test_each_kind_s_preflight_takes_its_own_server_and_refuses_the_other_s(tiny_rm_server, tiny_genrm_server):
    rm, genrm = tiny_rm_server, tiny_genrm_server
    report = check_endpoints([rm.url], RM_SERVED_NAME, kind=REWARD_MODEL, timeout=60)
    assert report.served == {rm.url: [RM_SERVED_NAME]} and report.template  # its template renders the answer
    with pytest.raises(EndpointCheckError) as as_genrm:
        check_endpoints([rm.url], JUDGE_MODEL, kind=GENRM, timeout=60)
    assert (f"{rm.url} does not serve the GenRM's API (GET /v1/chat/completions answered HTTP 404, "
            "GET /classify answered 405)") in str(as_genrm.value)
    with pytest.raises(EndpointCheckError) as as_rm:
        check_endpoints([genrm.url], JUDGE_MODEL, kind=REWARD_MODEL, timeout=60)
    assert (f"{genrm.url} does not serve the reward model's API (GET /classify answered HTTP 404, "
            "GET /v1/chat/completions answered 405)") in str(as_rm.value)


def test_a_ladder_through_the_cli_stores_the_raw_scores_of_exactly_the_rendered_tokens(tmp_path, tiny_rm_server,
                                                                                    tiny_genrm_server, prefect_server):
    rm, genrm = tiny_rm_server, tiny_genrm_server
    rows = tmp_path / "hs.jsonl"
    write_helpsteer3_rows(rows, PAIRS, seed=19)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(tmp_path / "w.duckdb"), "PREFECT_API_URL": prefect_server,
           "CURATE_JUDGE_RM_MODEL": RM_SERVED_NAME, "CURATE_JUDGE_MAX_MODEL_LEN": "4096",
           "CURATE_JUDGE_MAX_TOKENS": "200", "CURATE_JUDGE_RM_MAX_MODEL_LEN": "4096"}

    def curate(*args: str) -> dict:
        done = subprocess.run([CURATE, *args, "--json"], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    curate("ingest", "--source", "helpsteer3", "--path", str(rows))
    s = curate("judge", "--strategy", "ladder", "--rm-endpoint", rm.url, "--endpoint", genrm.url,
               "--target-agreement", "0.9")
    assert not s["simulated"] and s["rounds"][0]["judge"] == "reward_model"
    by_judge = s["cost"]["by_judge"]
    assert by_judge["reward_model"]["requests"] == s["rounds"][0]["judged"] == PAIRS
    assert by_judge["reward_model"]["gpu_seconds"] > 0
    with Warehouse(tmp_path / "w.duckdb", read_only=True) as wh:
        stored = wh.query(
            "SELECT p.history, p.response_a, p.response_b, j.raw_text, j.margin_a, j.tokens_in FROM judgments j "
            "JOIN judge_configs c USING (judge_config_id) JOIN candidate_pairs p USING (pair_id) "
            "WHERE c.kind = 'reward_model' ORDER BY j.pair_id LIMIT 3")
    assert len(stored) == 3
    with httpx.Client(timeout=60) as http:
        for history, a, b, raw, margin, tokens_in in stored:
            history = [{"role": m["role"], "content": m["content"]} for m in history]
            ids = [http.post(f"{rm.root_url}/tokenize", json={
                "model": RM_SERVED_NAME, "messages": conversation(history, answer), "add_generation_prompt": False,
                "add_special_tokens": False}).json()["tokens"] for answer in (a, b)]
            direct = http.post(f"{rm.root_url}/classify", json={"model": RM_SERVED_NAME, "input": ids,
                                                               "use_activation": False}).json()
            scores = [d["probs"][0] for d in sorted(direct["data"], key=lambda d: d["index"])]
            activated = http.post(f"{rm.root_url}/classify", json={"model": RM_SERVED_NAME, "input": ids}).json()
            probabilities = [d["probs"][0] for d in sorted(activated["data"], key=lambda d: d["index"])]
            assert json.loads(raw) == pytest.approx({"score_a": scores[0], "score_b": scores[1]}, abs=1e-6)
            assert margin == pytest.approx(scores[0] - scores[1], abs=1e-6)
            assert tokens_in == direct["usage"]["prompt_tokens"] == len(ids[0]) + len(ids[1])
            # the raw score, not the server's default activation (a sigmoid of it for one label)
            assert probabilities == pytest.approx([1 / (1 + math.exp(-v)) for v in scores], abs=1e-3)
            assert scores != pytest.approx(probabilities, abs=1e-3)


def test_a_ladder_on_real_vllm_scored_by_the_reward_model_alone_is_estimated_stopped_at_a_budget_and_resumed(
        tmp_path, tiny_rm_server, tiny_genrm_server, prefect_server):
    """Through the CLI on the real servers: `--reward-model-only` scores the rung and asks the GenRM nothing (its
    /metrics say so); `--estimate` sends nothing; a budget below one GenRM request stops before the first (exit 3,
    one line); the run without it asks the reward model nothing twice."""
    rm, genrm = tiny_rm_server, tiny_genrm_server
    pairs = 24
    rows = tmp_path / "hs.jsonl"
    write_helpsteer3_rows(rows, pairs, seed=23)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CURATE_")},
           "CURATE_WAREHOUSE": str(tmp_path / "w.duckdb"), "PREFECT_API_URL": prefect_server,
           "CURATE_JUDGE_RM_MODEL": RM_SERVED_NAME, "CURATE_JUDGE_MAX_MODEL_LEN": "4096",
           "CURATE_JUDGE_MAX_TOKENS": "200", "CURATE_JUDGE_RM_MAX_MODEL_LEN": "4096", "CURATE_JUDGE_MIN_ROUND": "1"}
    ladder = ["judge", "--strategy", "ladder", "--rm-endpoint", rm.url, "--endpoint", genrm.url,
              "--target-agreement", "0.9", "--json"]

    def curate(*args: str, rc: int = 0) -> subprocess.CompletedProcess:
        done = subprocess.run([CURATE, *args], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == rc, done.stderr[-3000:]
        return done

    def last(done: subprocess.CompletedProcess) -> dict:
        return json.loads(done.stdout.strip().splitlines()[-1])

    def served(server) -> float:  # the server's own count of requests it finished
        text = httpx.get(f"{server.root_url}/metrics", timeout=30).text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("vllm:request_success_total{"))

    curate("ingest", "--source", "helpsteer3", "--path", str(rows))
    with Warehouse(tmp_path / "w.duckdb", read_only=True) as wh:
        n = wh.query("SELECT count(*) FROM candidate_pairs")[0][0]
    before = served(genrm)
    alone = last(curate(*ladder, "--reward-model-only"))
    assert "--reward-model-only" in alone["rounds_ended"] and not alone["simulated"]
    assert alone["cost"]["by_judge"]["reward_model"]["requests"] == n and served(genrm) == before
    found = last(curate(*ladder, "--estimate"))["estimate"]
    assert served(genrm) == before  # the estimate sent nothing
    assert found["rungs"][0]["judge"] == "reward_model" and found["rungs"][0]["requests"]["high"] == 0
    first = found["rungs"][1]
    assert first["judge"] == "genrm" and 0 <= first["requests"]["expected"] <= first["requests"]["high"] == n
    stopped = curate(*ladder, "--budget-gpu-hours", "0.000001", rc=3)
    said = [line for line in stopped.stderr.splitlines() if "stopped at the GPU-hour budget" in line]
    assert len(said) == 1 and "a rerun with a larger --budget-gpu-hours resumes" in said[0], stopped.stderr[-2000:]
    assert served(genrm) == before  # below one request: none was sent
    s = last(curate(*ladder))
    assert s["reward_model"]["requests"] == 0  # nothing paid twice
    sent = s["cost"]["by_judge"]["genrm"]["requests"]
    assert served(genrm) - before == sent
    firsts = [r for r in s["rounds"] if r["judge"] == "genrm"]
    assert firsts and firsts[0]["requests"] == first["requests"]["expected"], (first, s["rounds"])
