#!/usr/bin/env python
"""Judge benchmark: the GenRM client against the stand-in, in three regimes.

    python benchmarks/judge.py                       # the issue's regimes (a few minutes)
    python benchmarks/judge.py --judgments 200 --latency 0.2 --distilabel-judgments 100 --sequential 5

1. Scheduling (a real GenRM's regime, scaled down): capacity 64, mean latency 2 s (lognormal, sigma 0.5),
   2,000 judgments (1,000 synthetic pairs x `swap`) through `judge_pairs` into a real DuckDB warehouse.
   Judgments/s, the stand-in's busy fraction (steady state: first response .. last request sent; and the
   whole run), the ratio to capacity / mean latency. Beside it, on the same server in the same run:
   (a) the model card's sequential loop (a sample), (b) distilabel's `OpenAILLM` in a `Pipeline` with its
   default batching, installed into the benchmark's own venv (never a project dependency). distilabel
   rejects the custom roles `response_1`/`response_2`, so its requests fold the history and both
   responses into ONE user message; a small proxy in front of the same stand-in unfolds them into the
   GenRM layout (the stand-in validates roles).
2. Client cost: capacity 32, mean latency 50 ms, 2,000 judgments: CPU ms per judgment in this process
   (HTTP, openai SDK, dispatcher, parse, warehouse writes); the stand-in runs in its own process.
3. Adaptive vs swap on synthetic pairs whose latent margin is known (the stand-in's `quality()`), with
   a position bias: requests saved, and how often the kept verdicts decide differently.

Ends with a TARGETS block (PASS / FAIL / NOT MEASURED). Every verdict here is SIMULATED by the stand-in.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runnable from a checkout without installing the project

from common.processes import stop_process
from tasks.ingest.normalize import pair_id as make_pair_id
from tasks.ingest.synth_rows import TextMaker
from tasks.judge.client import ClientOptions, JudgeResult
from tasks.judge.config import JudgeConfig
from tasks.judge.genrm import ParseFailure, build_messages, parse_completion
from tasks.judge.run import judge_pairs as _judge_pairs
from tasks.judge.run import results_table
from tasks.judge.strategies import Strategy, parse_strategy
from testing.genrm_standin import StandinConfig, StandinProcess, latency_for, quality
from warehouse.judging import PairText
from warehouse.store import Warehouse

TARGET_BUSY = 0.97
TARGET_THROUGHPUT = 0.93
TARGET_VS_DISTILABEL = 3.0
TARGET_CPU_MS = 8.0
DEFAULT_VENV = REPO / "benchmarks" / "out" / "venv-distilabel"  # benchmarks/out/ is git-ignored
REQUIREMENTS = REPO / "benchmarks" / "requirements-distilabel.txt"
SUMMARY_MARK = "BENCH-SUMMARY "
_no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# ---------------------------------------------------------------------------------------------------
# Data


def make_pairs(n: int, seed: int, pair_bytes: int) -> list[PairText]:
    """Synthetic pairs: a user turn (one in five a three-turn history) and two responses, ~pair_bytes."""
    tm = TextMaker(seed)
    prompt, response = max(40, pair_bytes // 5), max(40, 2 * pair_bytes // 5)
    pairs = []
    for i in range(n):
        if i % 5 == 4:
            history = [{"role": "user", "content": tm.text(prompt // 3)},
                       {"role": "assistant", "content": tm.text(prompt // 3)},
                       {"role": "user", "content": tm.text(prompt // 3)}]
        else:
            history = [{"role": "user", "content": tm.text(prompt)}]
        a, b = tm.text(response), tm.text(response)
        pairs.append(PairText(make_pair_id(history, a, b), history, a, b))
    return pairs


def requests_of(pairs: list[PairText], strategy: Strategy) -> list[list[dict[str, str]]]:
    """The message lists a fixed strategy sends, in the order `judge_pairs` plans them."""
    return [build_messages(p.history, p.response_a, p.response_b, order) for p in pairs
            for order, _ in strategy.initial()]


# ---------------------------------------------------------------------------------------------------
# Our client, writing into a real warehouse


@dataclass
class OurRun:
    summary: dict[str, Any]
    started_at: float  # wall clock, just before judge_pairs
    ended_at: float
    cpu_s: float  # this process's CPU time over judge_pairs
    write_cpu_s: float  # of which inside the warehouse sink (results_table + write_judgments)
    results: list[JudgeResult]


def run_ours(pairs: list[PairText], url: str, strategy: str, max_in_flight: int, wh: Warehouse,
             keep: bool = False, timeout: float = 60.0) -> OurRun:
    config = JudgeConfig()
    run_id = str(uuid.uuid4())
    wh.judging.register_judge_config({"judge_config_id": config.id, **{k: getattr(config, k) for k in (
        "model", "served_revision", "prompt_version", "temperature", "top_p", "max_tokens")}})
    plan = parse_strategy(strategy)
    wh.runs.start_judge_run(run_id, config.id, plan.label, [url], None)
    kept: list[JudgeResult] = []
    write_cpu = 0.0

    def write(batch: list[JudgeResult]) -> None:
        nonlocal write_cpu
        c0 = time.process_time()
        wh.judging.write_judgments(results_table(batch, config.id, run_id))
        write_cpu += time.process_time() - c0
        if keep:
            kept.extend(batch)

    options = ClientOptions(max_in_flight=max_in_flight, request_timeout=timeout)
    started, cpu0 = time.time(), time.process_time()
    summary = _judge_pairs(pairs, endpoints=[url], config=config, strategy=plan, options=options, states={},
                           write=write)
    cpu, ended = time.process_time() - cpu0, time.time()
    wh.runs.finish_judge_run(run_id, "completed", summary)
    return OurRun(summary, started, ended, cpu, write_cpu, kept)


def done(summary: dict[str, Any]) -> int:
    return summary["judged"] + sum(summary["failed"].values())


# ---------------------------------------------------------------------------------------------------
# The model card's sequential loop


def run_sequential(pairs: list[PairText], url: str, n: int) -> dict[str, Any]:
    from openai import OpenAI  # as on the model card: a plain synchronous client, one request at a time

    client = OpenAI(base_url=url, api_key="EMPTY")
    config = JudgeConfig()
    msgs = requests_of(pairs, parse_strategy("swap"))[:n]
    ok = failed = 0
    t0 = time.time()
    for messages in msgs:
        completion = client.chat.completions.create(
            model=config.model, messages=messages, temperature=0.6, top_p=0.95, max_tokens=16384)
        choice = completion.choices[0]
        parsed = parse_completion(choice.message.content, choice.finish_reason)
        ok, failed = ok + (not isinstance(parsed, ParseFailure)), failed + isinstance(parsed, ParseFailure)
    t1 = time.time()
    client.close()
    return {"requests": len(msgs), "judged": ok, "failed": failed, "seconds": t1 - t0, "start": t0, "end": t1}


# ---------------------------------------------------------------------------------------------------
# distilabel: its own venv, a child script, and a folding proxy in front of the stand-in

FOLD_HEAD = "GenRM request folded into one user message by benchmarks/judge.py (distilabel allows only system/user/assistant roles)"
_FOLD_SPLIT = re.compile(r"\n\[\[\[genrm:(user|assistant|system|response_1|response_2)\]\]\]\n")


def fold(messages: list[dict[str, str]]) -> str:
    """History + response_1 + response_2 as ONE user message, with explicit markers around each part."""
    return FOLD_HEAD + "".join(f"\n[[[genrm:{m['role']}]]]\n{m['content']}" for m in messages)


def unfold(text: str) -> list[dict[str, str]] | None:
    if not text.startswith(FOLD_HEAD):
        return None
    parts = _FOLD_SPLIT.split(text[len(FOLD_HEAD):])
    if parts[0] != "" or len(parts) % 2 != 1:
        return None
    return [{"role": parts[i], "content": parts[i + 1]} for i in range(1, len(parts), 2)]


def serve_fold_proxy(upstream: str, port: int) -> None:
    """A light reverse proxy: unfold a folded single user message into the GenRM layout, forward as is."""
    import httpx
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    state: dict[str, Any] = {"requests": 0, "unfolded": 0, "statuses": Counter(), "first_request_at": None,
                             "last_response_at": None, "cpu_at_first_request": None}
    client = httpx.AsyncClient(base_url=upstream.rstrip("/"), timeout=httpx.Timeout(900.0), trust_env=False,
                               limits=httpx.Limits(max_connections=None, max_keepalive_connections=1024))

    async def chat(request: Request) -> Response:
        state["requests"] += 1
        if state["first_request_at"] is None:
            state["first_request_at"], state["cpu_at_first_request"] = time.time(), time.process_time()
        body = orjson.loads(await request.body())
        messages = body.get("messages") or []
        if len(messages) == 1 and messages[0].get("role") == "user":
            layout = unfold(messages[0].get("content") or "")
            if layout is not None:
                body["messages"] = layout
                state["unfolded"] += 1
        reply = await client.post("/chat/completions", content=orjson.dumps(body),
                                  headers={"content-type": "application/json"})
        state["statuses"][str(reply.status_code)] += 1
        state["last_response_at"] = time.time()
        return Response(reply.content, status_code=reply.status_code, media_type="application/json")

    async def stats(request: Request) -> Response:
        return Response(orjson.dumps({**state, "cpu_s": time.process_time()}), media_type="application/json")

    async def health(request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                            Route("/proxy/stats", stats), Route("/health", health)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


class FoldProxy:
    def __init__(self, upstream: str):
        from testing.genrm_standin import _free_port

        self.port = _free_port("127.0.0.1")
        self.upstream = upstream
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/v1"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> FoldProxy:
        self.process = subprocess.Popen([sys.executable, __file__, "--serve-fold-proxy", self.upstream, str(self.port)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the folding proxy exited with code {self.process.returncode}")
            try:
                with _no_proxy.open(f"{self.base}/health", timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        self.__exit__()
        raise TimeoutError("the folding proxy did not come up in 30 s")

    def stats(self) -> dict[str, Any]:
        with _no_proxy.open(f"{self.base}/proxy/stats", timeout=10) as reply:
            return orjson.loads(reply.read())

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            stop_process(self.process, 10)


DISTILABEL_CHILD = r'''
import json, sys, time
from distilabel.pipeline import Pipeline
from distilabel.steps import LoadDataFromDicts
from distilabel.steps.tasks import TextGeneration
try:
    from distilabel.models import OpenAILLM
except ImportError:  # distilabel < 1.5
    from distilabel.llms import OpenAILLM
import distilabel

def main():
    data_path, out_path, url, model, cache_dir = sys.argv[1:6]
    data = [json.loads(line) for line in open(data_path)]
    with Pipeline(name="genrm-judge-bench", cache_dir=cache_dir) as pipeline:
        load = LoadDataFromDicts(data=data)
        llm = OpenAILLM(model=model, base_url=url, api_key="EMPTY",
                        generation_kwargs={"temperature": 0.6, "top_p": 0.95, "max_new_tokens": 16384})
        generate = TextGeneration(llm=llm)  # distilabel's default batching: input_batch_size untouched
        load >> generate
    t0 = time.time()
    distiset = pipeline.run(use_cache=False)
    t1 = time.time()
    rows = distiset["default"]["train"]
    with open(out_path, "w") as f:
        for row in rows:
            f.write(json.dumps({"key": row.get("key"), "generation": row.get("generation")}) + "\n")
    print(%(mark)r + json.dumps({
        "distilabel": distilabel.__version__, "rows": len(rows), "run_start": t0, "run_end": t1,
        "load_batch_size": load.batch_size, "input_batch_size": generate.input_batch_size,
        "llm_timeout": getattr(llm, "timeout", None), "llm_max_retries": getattr(llm, "max_retries", None),
    }), flush=True)

if __name__ == "__main__":
    main()
''' % {"mark": SUMMARY_MARK}


def ensure_distilabel_venv(venv: Path, log) -> tuple[Path | None, str]:
    """(python of a venv with distilabel + openai, version or error). Reused when present."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import distilabel, distilabel.pipeline, distilabel.steps.tasks, openai; "
             "print(distilabel.__version__, openai.__version__)"]
    if python.exists():
        r = subprocess.run(probe, capture_output=True, text=True)
        if r.returncode == 0:
            return python, r.stdout.strip()
    log(f"  creating {venv} and installing distilabel + openai into it (not a project dependency) ...")
    t0 = time.time()
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
        spec = ["-r", str(REQUIREMENTS)] if REQUIREMENTS.exists() else ["distilabel", "openai", "requests"]
        r = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *spec],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return None, f"pip install failed (exit {r.returncode}): {(r.stderr or r.stdout)[-2000:]}"
    except (OSError, subprocess.CalledProcessError) as err:
        return None, f"could not create the venv: {err}"
    r = subprocess.run(probe, capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"distilabel does not import after install: {r.stderr[-2000:]}"
    log(f"  installed in {time.time() - t0:.0f} s")
    return python, r.stdout.strip()


@dataclass
class DistilabelRun:
    judged: int = 0
    failed: int = 0
    sent: int = 0
    child: dict[str, Any] | None = None
    proxy: dict[str, Any] | None = None
    busy_fraction: float | None = None
    error: str | None = None

    @property
    def window_s(self) -> float:
        return self.proxy["last_response_at"] - self.proxy["first_request_at"]

    @property
    def per_second(self) -> float:
        return self.judged / self.window_s


def run_distilabel(pairs: list[PairText], judge: StandinProcess, n: int, python: Path, workdir: Path) -> DistilabelRun:
    run = DistilabelRun()
    msgs = requests_of(pairs, parse_strategy("swap"))[:n]
    for m in msgs:  # the fold must be lossless: the stand-in then sees exactly our GenRM layout
        assert unfold(fold(m)) == m, "fold/unfold lost information"
    data, out, script = workdir / "distilabel_in.jsonl", workdir / "distilabel_out.jsonl", workdir / "distilabel_child.py"
    data.write_text("".join(orjson.dumps({"instruction": fold(m), "key": i}).decode() + "\n" for i, m in enumerate(msgs)))
    script.write_text(DISTILABEL_CHILD)
    run.sent = len(msgs)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", DO_NOT_TRACK="1", NO_COLOR="1",
               DISTILABEL_LOG_LEVEL="WARNING", OPENAI_API_KEY="EMPTY", TERM="dumb", COLUMNS="200")
    with FoldProxy(judge.url) as proxy:
        r = subprocess.run([str(python), str(script), str(data), str(out), proxy.url, JudgeConfig().model,
                            str(workdir / "distilabel-cache")], capture_output=True, text=True, env=env,
                           cwd=workdir, timeout=3600)
        run.proxy = proxy.stats()
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(SUMMARY_MARK)]
    if r.returncode != 0 or not lines:
        run.error = f"exit {r.returncode}; stderr tail:\n{(r.stderr or '')[-3000:]}\nstdout tail:\n{(r.stdout or '')[-1500:]}"
        return run
    run.child = orjson.loads(lines[-1][len(SUMMARY_MARK):])
    for line in out.read_text().splitlines():
        gen = orjson.loads(line).get("generation")
        ok = gen is not None and not isinstance(parse_completion(gen), ParseFailure)
        run.judged, run.failed = run.judged + ok, run.failed + (not ok)
    if run.proxy["first_request_at"] and run.proxy["last_response_at"]:
        run.busy_fraction = judge.stats(run.proxy["first_request_at"], run.proxy["last_response_at"])["busy_fraction"]
    else:
        run.error = "the proxy saw no request"
    return run


# ---------------------------------------------------------------------------------------------------
# Printing


def line(label: str, value: str) -> None:
    print(f"  {label:<46} {value}")


def target(name: str, measured: str, ok: bool | None) -> None:
    verdict = "NOT MEASURED" if ok is None else "PASS" if ok else "FAIL"
    print(f"  {verdict:<12}  {name:<54} {measured}")


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


# ---------------------------------------------------------------------------------------------------
# Regimes


def regime_scheduling(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    cap, lat = args.capacity, args.latency
    ideal = cap / lat
    n_pairs = args.judgments // 2
    print(f"\n1. SCHEDULING: stand-in capacity {cap}, latency lognormal mean {lat} s sigma {args.sigma}; "
          f"{n_pairs} pairs x swap = {2 * n_pairs} judgments; capacity / mean latency = {ideal:.2f} judgments/s")
    pairs = make_pairs(n_pairs, args.seed, args.pair_bytes)

    python = version = None
    if not args.skip_distilabel:  # install before any timing, never during
        python, version = ensure_distilabel_venv(args.distilabel_venv, print)
        if python is None:
            print(f"  distilabel NOT AVAILABLE: {version}")

    standin = StandinConfig(capacity=cap, latency_mean=lat, latency_sigma=args.sigma)
    with StandinProcess(standin) as judge:
        # -- ours
        with Warehouse(tmp / "scheduling.duckdb") as wh:
            ours = run_ours(pairs, judge.url, "swap", args.max_in_flight, wh)
            stored = wh.judging.judgment_counts(JudgeConfig().id)
        s = ours.summary
        steady = judge.stats(s["first_response_at"], s["last_request_sent_at"])
        whole = judge.stats(ours.started_at, ours.ended_at)
        n = done(s)
        per_s = n / s["seconds"]
        service = [latency_for(m, 0, standin) for m in requests_of(pairs, parse_strategy("swap"))]
        realised = statistics.fmean(service)
        print(f"\n  ours: judge_pairs(swap), ClientOptions(max_in_flight={args.max_in_flight}, request_timeout=60), "
              f"DuckDB warehouse writes included")
        line("judgments (ok / failed / requests)", f"{s['judged']} / {sum(s['failed'].values())} / {s['requests']}"
             f"   stored in the warehouse: {stored}")
        line("whole run", f"{s['seconds']:.2f} s")
        line("judgments/s (whole run)", f"{per_s:.2f}   = {per_s / ideal:.3f} of capacity / mean latency")
        line("steady window (first response .. last request)",
             f"{s['last_request_sent_at'] - s['first_response_at']:.2f} s")
        line("stand-in busy fraction, steady window", f"{steady['busy_fraction']:.4f}")
        line("stand-in busy fraction, whole run", f"{whole['busy_fraction']:.4f}")
        drain = ours.ended_at - s["last_request_sent_at"]
        line("final drain (last request sent .. end)", f"{drain:.2f} s (the longest requests finishing)")
        line("realised mean service time of these requests", f"{realised:.3f} s (nominal {lat} s): "
             f"{per_s / (cap / realised):.3f} of capacity / realised mean")
        line("client CPU over the run", f"{ours.cpu_s:.2f} s ({1000 * ours.cpu_s / max(1, n):.2f} ms/judgment)")
        results.update(busy_steady=steady["busy_fraction"], busy_whole=whole["busy_fraction"], ours_per_s=per_s,
                       ideal=ideal, realised_ratio=per_s / (cap / realised))

        # -- (a) the model card's sequential loop
        if args.sequential > 0:
            seq = run_sequential(pairs, judge.url, args.sequential)
            seq_busy = judge.stats(seq["start"], seq["end"])["busy_fraction"]
            seq_per_s = seq["judged"] / seq["seconds"]
            print(f"\n  (a) the model card's sequential loop: OpenAI(...).chat.completions.create per pair, one at a "
                  f"time; A SAMPLE of {seq['requests']} requests, not {2 * n_pairs}")
            line("judgments (ok / failed)", f"{seq['judged']} / {seq['failed']} in {seq['seconds']:.2f} s")
            line("judgments/s", f"{seq_per_s:.3f}   = {pct(seq_per_s / ideal)} of capacity / mean latency")
            line("stand-in busy fraction over the sample", f"{seq_busy:.4f}")
            line("ours / sequential", f"{per_s / seq_per_s:.1f}x")
            results["sequential_per_s"] = seq_per_s

        # -- (b) distilabel
        if args.skip_distilabel:
            results["distilabel_error"] = "skipped (--skip-distilabel)"
        elif python is None:
            results["distilabel_error"] = version
        else:
            print(f"\n  (b) distilabel {version.split()[0]} (openai {version.split()[-1]}, venv {args.distilabel_venv}): "
                  f"Pipeline(LoadDataFromDicts >> TextGeneration(OpenAILLM)), default batching")
            print("      NOTE: distilabel validates roles and rejects response_1/response_2, so each request sends the "
                  "history and both responses FOLDED INTO ONE USER MESSAGE (with markers); a small proxy in front of "
                  "the same stand-in unfolds it into the GenRM layout (the stand-in validates roles). "
                  f"{min(args.distilabel_judgments, 2 * n_pairs)} judgments (the first pairs, both orders).")
            dl = run_distilabel(pairs, judge, min(args.distilabel_judgments, 2 * n_pairs), python, tmp)
            if dl.error:
                print(f"      distilabel FAILED: {dl.error}")
                results["distilabel_error"] = "distilabel run failed"
            else:
                c, p = dl.child, dl.proxy
                line("batching", f"LoadDataFromDicts batch_size {c['load_batch_size']}, TextGeneration "
                     f"input_batch_size {c['input_batch_size']} (defaults)")
                line("judgments (parsed ok / not) of requests sent", f"{dl.judged} / {dl.failed} of {dl.sent}; "
                     f"proxy saw {p['requests']} ({p['unfolded']} unfolded), statuses {dict(p['statuses'])}")
                line("request window (proxy: first request .. last answer)", f"{dl.window_s:.2f} s")
                line("pipeline.run() wall (start-up included)", f"{c['run_end'] - c['run_start']:.2f} s")
                line("judgments/s over the request window", f"{dl.per_second:.2f}   = "
                     f"{pct(dl.per_second / ideal)} of capacity / mean latency")
                line("judgments/s over pipeline.run()", f"{dl.judged / (c['run_end'] - c['run_start']):.2f}")
                line("stand-in busy fraction, request window", f"{dl.busy_fraction:.4f}")
                line("proxy CPU (its own process)", f"{1000 * (p['cpu_s'] - p['cpu_at_first_request']) / max(1, p['requests']):.2f} "
                     "ms/request")
                line("ours (whole run) / distilabel (request window)", f"{per_s / dl.per_second:.2f}x")
                results["distilabel_per_s"] = dl.per_second


def regime_cost(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    cap, lat = args.cost_capacity, args.cost_latency
    mif = cap + args.cost_headroom
    n_pairs = args.cost_judgments // 2
    print(f"\n2. CLIENT COST: stand-in capacity {cap}, latency lognormal mean {lat * 1000:.0f} ms sigma {args.sigma}; "
          f"{n_pairs} pairs x swap = {2 * n_pairs} judgments; max_in_flight {mif}")
    pairs = make_pairs(n_pairs, args.seed + 1, args.pair_bytes)
    warm = make_pairs(args.warmup // 2, args.seed + 2, args.pair_bytes)
    with StandinProcess(StandinConfig(capacity=cap, latency_mean=lat, latency_sigma=args.sigma)) as judge, \
            Warehouse(tmp / "cost.duckdb") as wh:
        w = run_ours(warm, judge.url, "swap", mif, wh) if warm else None
        run = run_ours(pairs, judge.url, "swap", mif, wh, keep=True)
        busy = judge.stats(run.started_at, run.ended_at)["busy_fraction"]
    s = run.summary
    n = done(s)
    ms = 1000 * run.cpu_s / max(1, n)
    # parse alone, re-measured offline on the very texts of this run
    texts = [(r.raw_text, r.finish_reason, r.reasoning) for r in run.results if r.raw_text is not None]
    c0 = time.process_time()
    for t in texts:
        parse_completion(*t)
    parse_ms = 1000 * (time.process_time() - c0) / max(1, len(texts))
    if w is not None:
        line(f"warm-up first (not counted): {done(w.summary)} judgments",
             f"{1000 * w.cpu_s / max(1, done(w.summary)):.2f} ms CPU/judgment (first-use costs: imports, pools)")
    line("judgments (ok / failed / requests)", f"{s['judged']} / {sum(s['failed'].values())} / {s['requests']}")
    line("whole run", f"{s['seconds']:.2f} s, {n / s['seconds']:.1f} judgments/s "
         f"({n / s['seconds'] / (cap / lat):.3f} of capacity / mean latency)")
    line("stand-in busy fraction, whole run", f"{busy:.4f}")
    line("client CPU (this process, all threads)", f"{run.cpu_s:.3f} s = {ms:.2f} ms/judgment")
    line("  of which warehouse sink (table + DuckDB write)", f"{1000 * run.write_cpu_s / max(1, n):.2f} ms/judgment")
    line("  of which parse_completion (re-timed offline)", f"{parse_ms:.3f} ms/judgment")
    line("  the rest (HTTP, openai SDK, dispatcher, planning)",
         f"{ms - 1000 * run.write_cpu_s / max(1, n) - parse_ms:.2f} ms/judgment")
    results["cpu_ms"] = ms


def decisions(results: list[JudgeResult]) -> tuple[dict[str, int], Counter]:
    """Per pair: sign of the mean margin over its ok verdicts (+1 A, -1 B, 0 tie); and requests per pair."""
    margins: dict[str, list[float]] = {}
    for r in results:
        if r.status == "ok":
            margins.setdefault(r.request.pair_id, []).append(r.side.margin)
    per_pair = Counter(r.request.pair_id for r in results)
    out = {}
    for pid, ms in margins.items():
        mean = statistics.fmean(ms)
        out[pid] = 0 if abs(mean) < 1e-9 else (1 if mean > 0 else -1)
    return out, per_pair


def regime_adaptive(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    n_pairs = args.adaptive_pairs
    cap, lat, bias = args.adaptive_capacity, args.adaptive_latency, args.position_bias
    print(f"\n3. ADAPTIVE vs SWAP: {n_pairs} synthetic pairs; stand-in capacity {cap}, latency {lat * 1000:.0f} ms, "
          f"position bias {bias} ranking units toward the response shown first")
    pairs = make_pairs(n_pairs, args.seed + 3, args.pair_bytes)
    dq = {pid: quality(a) - quality(b) for pid, _, a, b in pairs}  # the known latent margin (quality units)
    absq = sorted(abs(v) for v in dq.values())
    qs = [absq[min(len(absq) - 1, int(q * len(absq)))] for q in (0.1, 0.25, 0.5, 0.75, 0.9)]
    print("  known latent margin q(A) - q(B) (stand-in quality(), uniform [0, 5) per response):")
    line("|q(A) - q(B)| quantiles p10/p25/p50/p75/p90", " / ".join(f"{q:.2f}" for q in qs))
    # the latent ranking without noise or bias, and the share a noise-free unbiased judge calls borderline
    latent_rank = Counter(min(6, max(1, math.floor(3.5 - 1.2 * v + 0.5))) for v in dq.values())
    line("latent ranking (no noise, no bias): 1..6", "  ".join(f"{k}:{latent_rank.get(k, 0)}" for k in range(1, 7)))
    hist = Counter(min(4, int(abs(v))) for v in dq.values())
    line("histogram of |dq|: [0,1) [1,2) [2,3) [3,4) [4,5)", "  ".join(str(hist.get(k, 0)) for k in range(5)))
    latent = {pid: (1 if v > 0 else -1 if v < 0 else 0) for pid, v in dq.items()}

    runs = {}
    with StandinProcess(StandinConfig(capacity=cap, latency_mean=lat, latency_sigma=args.sigma,
                                      position_bias=bias)) as judge:
        for strategy in ("swap", "adaptive:2"):
            with Warehouse(tmp / f"adaptive-{strategy.replace(':', '-')}.duckdb") as wh:  # an empty cache each
                runs[strategy] = run_ours(pairs, judge.url, strategy, cap + 8, wh, keep=True)
    (d_swap, n_swap), (d_ad, n_ad) = decisions(runs["swap"].results), decisions(runs["adaptive:2"].results)
    req_swap, req_ad = runs["swap"].summary["requests"], runs["adaptive:2"].summary["requests"]
    for name, run, d, per in (("swap", runs["swap"], d_swap, n_swap), ("adaptive:2", runs["adaptive:2"], d_ad, n_ad)):
        s = run.summary
        agree = sum(d.get(p) == latent[p] for p in latent) / len(latent)
        ties = sum(v == 0 for v in d.values())
        spread = Counter(per.values())
        line(f"{name}: requests (ok / failed)", f"{s['requests']} ({s['judged']} / {sum(s['failed'].values())}), "
             f"per pair {dict(sorted(spread.items()))}")
        line(f"{name}: decision = latent sign", f"{pct(agree)} of pairs ({ties} ties)")
    saving = 1 - req_ad / req_swap
    common = [p for p in latent if p in d_swap and p in d_ad]
    differ = sum(d_swap[p] != d_ad[p] for p in common)
    line("adaptive saves against swap", f"{pct(saving)} of requests ({req_swap} -> {req_ad})")
    line("kept verdicts decide differently", f"{differ} of {len(common)} pairs ({pct(differ / max(1, len(common)))})")
    flips = Counter((d_swap[p], d_ad[p]) for p in common if d_swap[p] != d_ad[p])
    name = {1: "A", -1: "B", 0: "tie"}
    if flips:
        line("  swap -> adaptive", ", ".join(f"{name[a]}->{name[b]}: {c}" for (a, b), c in flips.most_common()))
    results.update(adaptive_saving=saving, adaptive_differ=differ / max(1, len(common)))


# ---------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--regimes", default="scheduling,cost,adaptive", help="comma-separated subset to run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pair-bytes", type=int, default=3000, help="text bytes per synthetic pair (history + both)")
    p.add_argument("--sigma", type=float, default=0.5, help="lognormal sigma of the stand-in's latency")
    g = p.add_argument_group("1. scheduling")
    g.add_argument("--judgments", type=int, default=2000, help="judgments (pairs x 2 orders), default 2000")
    g.add_argument("--capacity", type=int, default=64)
    g.add_argument("--latency", type=float, default=2.0, help="mean latency in seconds, default 2")
    g.add_argument("--max-in-flight", type=int, default=72, help="client's max_in_flight (capacity + headroom)")
    g.add_argument("--sequential", type=int, default=20, help="requests in the sequential sample (0: skip)")
    g.add_argument("--distilabel-judgments", type=int, default=500)
    g.add_argument("--distilabel-venv", type=Path, default=DEFAULT_VENV, help="created on first use, then reused")
    g.add_argument("--skip-distilabel", action="store_true")
    g = p.add_argument_group("2. client cost")
    g.add_argument("--cost-judgments", type=int, default=2000)
    g.add_argument("--cost-capacity", type=int, default=32)
    g.add_argument("--cost-latency", type=float, default=0.05)
    g.add_argument("--cost-headroom", type=int, default=0, help="max_in_flight = cost capacity + this")
    g.add_argument("--warmup", type=int, default=100, help="judgments run (and not counted) before measuring")
    g = p.add_argument_group("3. adaptive vs swap")
    g.add_argument("--adaptive-pairs", type=int, default=1000)
    g.add_argument("--adaptive-capacity", type=int, default=32)
    g.add_argument("--adaptive-latency", type=float, default=0.02)
    g.add_argument("--position-bias", type=float, default=0.5)
    p.add_argument("--serve-fold-proxy", nargs=2, metavar=("UPSTREAM", "PORT"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.serve_fold_proxy:
        serve_fold_proxy(args.serve_fold_proxy[0], int(args.serve_fold_proxy[1]))
        return
    regimes = {r.strip() for r in args.regimes.split(",") if r.strip()}
    unknown = regimes - {"scheduling", "cost", "adaptive"}
    if unknown:
        raise SystemExit(f"unknown regimes {sorted(unknown)}: use scheduling, cost, adaptive")
    import openai

    print(f"judge benchmark: GenRM stand-in (verdicts SIMULATED), {os.cpu_count()} CPUs, python "
          f"{sys.version.split()[0]}, openai {openai.__version__}, seed {args.seed}, ~{args.pair_bytes} bytes/pair")
    results: dict[str, Any] = {}
    tmp = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    try:
        if "scheduling" in regimes:
            regime_scheduling(args, tmp, results)
        if "cost" in regimes:
            regime_cost(args, tmp, results)
        if "adaptive" in regimes:
            regime_adaptive(args, tmp, results)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("\nTARGETS")
    if "scheduling" in regimes:
        target(f"busy fraction, steady state >= {TARGET_BUSY}", f"{results['busy_steady']:.4f} "
               f"(whole run {results['busy_whole']:.4f})", results["busy_steady"] >= TARGET_BUSY)
        ratio = results["ours_per_s"] / results["ideal"]
        target(f"judgments/s >= {TARGET_THROUGHPUT} x capacity / mean latency",
               f"{results['ours_per_s']:.2f}/s = {ratio:.3f} x {results['ideal']:.2f}/s "
               f"({results['realised_ratio']:.3f} of the realised mean's)", ratio >= TARGET_THROUGHPUT)
        if "distilabel_per_s" in results:
            x = results["ours_per_s"] / results["distilabel_per_s"]
            target(f">= {TARGET_VS_DISTILABEL:g}x distilabel's judgments/s",
                   f"{x:.2f}x ({results['ours_per_s']:.2f} vs {results['distilabel_per_s']:.2f}/s)", x >= TARGET_VS_DISTILABEL)
        else:
            target(f">= {TARGET_VS_DISTILABEL:g}x distilabel's judgments/s", results.get("distilabel_error", "?"), None)
    if "cost" in regimes:
        target(f"client CPU <= {TARGET_CPU_MS:g} ms/judgment (parse + warehouse)", f"{results['cpu_ms']:.2f} ms",
               results["cpu_ms"] <= TARGET_CPU_MS)
    if "adaptive" in regimes:
        print(f"  (report) adaptive:2 saves {pct(results['adaptive_saving'])} of swap's requests; kept verdicts "
              f"decide differently on {pct(results['adaptive_differ'])} of pairs")


if __name__ == "__main__":
    main()
