"""The judge against the real vLLM OpenAI server (CPU build) serving the tiny GenRM (testing/tiny_genrm.py):
preflight, exact budgets with the server's own tokenizer, verdicts with the reasoning parser on and off, the
product's own `--launch-vllm`, /metrics, and the GPU command line read by vLLM's own argument parser.

Skipped without the vLLM venv (CURATE_TEST_VLLM_PYTHON, set by .ci/run); the servers are the session's."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from common.settings import JUDGE_MODEL, Settings
from tasks.judge.client import ClientOptions
from tasks.judge.config import JudgeConfig
from tasks.judge.endpoints import EndpointCheckError, check_judge
from tasks.judge.preflight import probe_template
from tasks.judge.run import judge_pairs
from tasks.judge.server import VllmLaunch, vllm_command
from tasks.judge.strategies import parse_strategy
from testing.tiny_genrm import (
    DROP_ROLES_TEMPLATE,
    TEMPLATE_FILES,
    expected_verdict,
    synthetic_pair,
    write_helpsteer3_rows,
)
from tests.real_vllm import VllmServerSpec
from warehouse.judging import PairText

pytestmark = pytest.mark.vllm
CURATE = str(Path(sys.executable).with_name("curate"))
MAX_TOKENS = 200  # the tiny GenRM answers in about 50 tokens


def _settings(**kw) -> Settings:
    return Settings(**{"judge_max_model_len": 4096, "judge_max_tokens": MAX_TOKENS, **kw})


def _pairs(n: int, seed: int) -> list[PairText]:
    rng = random.Random(seed)
    return [PairText(f"pair-{seed}-{i}", *synthetic_pair(rng)) for i in range(n)]


def _judge(url: str, pairs, strategy: str = "swap", temperature: float = 0.6, budget: int | None = None):
    written = []
    summary = judge_pairs(pairs, endpoints=[url], config=JudgeConfig(temperature=temperature, max_tokens=MAX_TOKENS),
                          strategy=parse_strategy(strategy), options=ClientOptions(request_timeout=120), states={},
                          write=written.extend, input_budget=budget)
    return summary, written


def test_the_first_contact_that_failed_every_judgment_is_refused_before_anything_is_sent(tiny_genrm_server):
    # the server serves 4,096 tokens; the judge's defaults need 40,000 (a prompt budget + 16,384 to answer)
    with pytest.raises(EndpointCheckError) as err:
        check_judge([tiny_genrm_server.url], Settings())
    assert "serves a context of 4096 tokens, but the judge needs 40000" in str(err.value)
    assert "--max-model-len 40000" in str(err.value)


def test_the_real_template_passes_and_is_fingerprinted(tiny_genrm_server):
    report = check_judge([tiny_genrm_server.url], _settings())
    assert report.template.startswith("tpl-") and report.untokenized == [] and report.probe_tokens > 20
    assert report.contexts == {tiny_genrm_server.url: 4096}
    # the base template's behaviour, rendered by the real server: both answers are gone
    dropped = probe_template(tiny_genrm_server.url, tiny_genrm_server.model, 10, chat_template=DROP_ROLES_TEMPLATE)
    assert dropped.missing == ("response_1", "response_2") and dropped.fingerprint != report.template


# Text kinds whose bytes per token differ most from the ingest's estimate (a token per 3 bytes)
KINDS = {
    "english": "The committee reviews the proposal before the meeting ends. ",
    "thai": "ภาษาไทยเป็นภาษาที่มีเอกลักษณ์และสวยงามมาก ",
    "chinese": "人工智能正在改变我们的生活方式和工作方式。",
    "base64": "U29tZSBiYXNlNjQgZW5jb2RlZCBkYXRhIGdvZXMgaGVyZQ== ",
    "symbols": "=+-*/<>!?#@$%^&()[]{}|~`;:,. ",
}


def test_prompts_are_counted_by_the_servers_tokenizer_and_none_is_refused_for_its_length(tiny_genrm_server):
    budget = 4096 - MAX_TOKENS
    rng = random.Random(3)
    pairs = []
    for kind, unit in KINDS.items():
        history, a, b = synthetic_pair(rng)
        for size in (1500, 9000, 30000):  # bytes of padding in the question: some fit, some do not
            text = (unit * (size // len(unit.encode()) + 1))
            pairs.append(PairText(f"{kind}-{size}", [{"role": "user", "content": text + history[-1]["content"]}], a, b))
    summary, written = _judge(tiny_genrm_server.url, pairs, strategy="single", budget=budget)
    reasons = Counter(r.failure_reason for r in written)
    assert not {k for k in reasons if k and (k.startswith("http_") or k == "too_long")}, reasons  # never a 400
    over = [r for r in written if r.failure_reason == "over_budget"]
    sent = [r for r in written if r.failure_reason != "over_budget"]
    assert over and sent, reasons
    counts = {r.request.pair_id: int(r.error.split(" tokens")[0].rsplit(" ", 1)[1]) for r in over}
    assert all(c > budget for c in counts.values())
    assert all(r.tokens_in <= budget for r in sent if r.tokens_in)  # the server's own usage agrees
    assert summary["prompt_tokens"]["counted_by"] == "server"


def test_verdicts_are_the_same_with_the_reasoning_parser_on_and_off(tiny_genrm_server, vllm_servers):
    pairs = _pairs(6, seed=41)
    _, plain = _judge(tiny_genrm_server.url, pairs, temperature=0.0)
    parsed_server = vllm_servers.start(VllmServerSpec(reasoning_parser="deepseek_r1"))
    _, parsed = _judge(parsed_server.url, pairs, temperature=0.0)

    def verdicts(results):
        return {(r.request.pair_id, r.request.order): (r.status, r.verdict) for r in results}

    assert verdicts(plain) == verdicts(parsed)
    ok = [r for r in plain + parsed if r.status == "ok"]
    assert len(ok) >= 0.8 * len(plain + parsed)
    for r in ok:  # the trace is stored apart in both cases, the answer alone in raw_text
        assert r.reasoning and "</think>" not in r.raw_text and r.raw_text.strip().startswith("{")
    right = sum(1 for r in plain if r.status == "ok" and (r.verdict.score_1, r.verdict.score_2, r.verdict.ranking)
                == expected_verdict(*_shown(pairs, r.request)))
    assert right >= 0.8 * len(plain)


def _shown(pairs, request):
    pair = next(p for p in pairs if p.pair_id == request.pair_id)
    a, b = pair.response_a, pair.response_b
    return (a, b) if request.order == "ab" else (b, a)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_launch_vllm_starts_the_real_server_judges_measures_and_stops_it(tmp_path, vllm_python, tiny_genrm_dir,
                                                                          prefect_server):
    rows = tmp_path / "hs.jsonl"
    write_helpsteer3_rows(rows, 12, seed=7)  # a third behind a long shared history
    port = _free_port()
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "CURATE_VLLM_PYTHON": vllm_python,
           "CURATE_VLLM_MODEL_PATH": str(tiny_genrm_dir), "CURATE_VLLM_DEVICE": "cpu",
           "CURATE_VLLM_CHAT_TEMPLATE": str(tiny_genrm_dir / TEMPLATE_FILES["genrm"]),
           "CURATE_JUDGE_MAX_MODEL_LEN": "4096", "CURATE_JUDGE_MAX_TOKENS": str(MAX_TOKENS),
           "CURATE_VLLM_PORT": str(port), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "VLLM_NO_USAGE_STATS": "1"}
    w = ["--warehouse", str(tmp_path / "w.duckdb")]
    done = subprocess.run([CURATE, "ingest", "--source", "helpsteer3", "--path", str(rows), *w, "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    done = subprocess.run([CURATE, "judge", "--launch-vllm", *w, "--json"], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["requests"] == 24 and summary["judged"] >= 12, summary
    assert summary["served_models"] == [JUDGE_MODEL] and summary["preflight_seconds"] < 30
    # served under the judge's name, but the weights are the folder's: the configuration says so
    assert summary["weights"] == str(tiny_genrm_dir) and not summary["simulated"]
    measured = summary["server_metrics"]
    assert measured["measured"] and measured["prompt_tokens"] > 0 and measured["generation_tokens"] > 0
    # both orders of a pair go to the one server back to back: its prefix cache serves the shared history
    assert 0.0 < measured["prefix_cache_hit_rate"] <= measured["attainable_prefix_hit_rate"] + 0.05, measured
    assert summary["cost"]["tokens_measured_by"] == "server /metrics"
    with socket.socket() as sock:  # the launched server is gone with the command
        assert sock.connect_ex(("127.0.0.1", port)) != 0


PARSER_CHECK = """
import json, sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
try:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
except ImportError:
    from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
parser = make_arg_parser(FlexibleArgumentParser())
args = parser.parse_args(json.loads(sys.argv[1]))
validate_parsed_serve_args(args)
print(json.dumps({"tp": args.tensor_parallel_size, "dp": args.data_parallel_size, "len": args.max_model_len}))
"""


def test_the_gpu_command_line_is_one_vllms_own_parser_accepts(vllm_python, tmp_path):
    template = tmp_path / "chat_template.jinja"  # vLLM checks that a template file exists
    template.write_text("{{ messages }}")
    argv = vllm_command(VllmLaunch(tensor_parallel_size=8, data_parallel_size=2, max_num_seqs=256,
                                   chat_template=str(template), reasoning_parser="deepseek_r1"))
    flags = argv[argv.index("vllm.entrypoints.openai.api_server") + 1:]
    done = subprocess.run([vllm_python, "-c", PARSER_CHECK, json.dumps(flags)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"tp": 8, "dp": 2, "len": 40000}
    # a renamed flag fails here, not on a GPU night
    bad = subprocess.run([vllm_python, "-c", PARSER_CHECK, json.dumps(flags + ["--gpu-memory-utilisation", "0.9"])],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "unrecognized arguments" in bad.stderr
