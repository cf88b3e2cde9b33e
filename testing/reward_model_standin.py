"""Reward-model stand-in: a server with vLLM's pooling API shape (`--runner pooling`), scores SIMULATED.

It answers like a sequence-classification reward model served by vLLM (`POST /classify` and `POST /pooling` with
token ids or strings, `POST /tokenize` with chat messages, `/v1/models`, `/metrics`), so the reward-model judge
kind and the judge ladder can be tested here. Nothing here reads an answer: each answer's score follows its latent
quality (`tasks/ingest/latent.py`, the truth the synthetic labels and the GenRM stand-in follow too) with noise and
biases of its own (a length bias; a slice of prompts, chosen by a hash of the prompt, stands for a domain it is bad
at, where its scores follow the truth only weakly), and a latency of its own (a prefill, no reasoning to decode).

Run: `curate judge-standin --kind reward-model --port 8001`, or `with RewardStandinProcess(config) as rm: rm.url`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tasks.judge.server import ManagedServer
from testing.genrm_standin import (
    QUIET_ON_DISCONNECT,
    _error,
    _free_port,
    _json,
    _Server,
    _unit,
    _Uvicorn,
    detokenize,
    quality,
    server_routes,
    tokenize,
)

REAL_MODEL = "Skywork/Skywork-Reward-V2-Llama-3.1-8B"
DEFAULT_MODEL = f"SIMULATED-reward-model-standin (not {REAL_MODEL})"
ROOT = "SIMULATED: testing/reward_model_standin.py, no weights"
BOS = "<|begin_of_text|>"
SCORE_SCALE = 2.0  # raw scores in score units per latent-quality unit (Skywork's raw scores span about -20..20)
_TURN = re.compile(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>\n", re.DOTALL)


@dataclass(frozen=True)
class RewardStandinConfig:
    capacity: int = 256  # sequences scored at once; the rest wait
    latency_mean: float = 0.004  # seconds per request, lognormal: one prefill, nothing decoded
    latency_sigma: float = 0.3
    noise: float = 0.6  # standard deviation of a score's noise, in latent-quality units
    length_bias: float = 0.0  # quality units credited per unit of log answer length (a verbosity bias)
    weak_share: float = 0.25  # share of prompts (by a hash of the prompt) of the domain it is bad at
    weak_signal: float = 0.15  # how much of the truth its scores follow there (1: as well as anywhere)
    seed: int = 0
    model: str = DEFAULT_MODEL
    max_model_len: int = 16_384
    # what the generic server's counters read (the GenRM stand-in's)
    oracle: str = ""
    drop_response_roles: bool = False

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {self.capacity}")
        if min(self.latency_mean, self.latency_sigma, self.noise, self.weak_signal) < 0:
            raise ValueError("latency_mean, latency_sigma, noise and weak_signal must be >= 0")
        if not 0.0 <= self.weak_share <= 1.0:
            raise ValueError(f"weak_share must lie in [0, 1], got {self.weak_share}")


def render(messages: list[dict[str, str]], add_generation_prompt: bool = False) -> str:
    """A Llama-style template: it opens with the BOS itself (so a tokenizer that adds one more duplicates it)."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return BOS + turns + ("<|im_start|>assistant\n" if add_generation_prompt else "")


def turns_of(text: str) -> list[tuple[str, str]]:
    return _TURN.findall(text)


def weak(prompt: str, config: RewardStandinConfig) -> bool:
    """Whether a prompt is of the domain the simulated reward model is bad at."""
    return _unit("rm-weak", prompt) < config.weak_share


def score_for(prompt: str, answer: str, config: RewardStandinConfig) -> float:
    """The SIMULATED raw score of one answer to `prompt`: its latent quality (weakly followed in the domain it is
    bad at), its own noise and a length bias, on the reward model's scale."""
    u = min(max(_unit("rm-noise", prompt, answer), 1e-12), 1 - 1e-12)
    signal = quality(answer) * (config.weak_signal if weak(prompt, config) else 1.0)
    return SCORE_SCALE * (signal + config.noise * NormalDist().inv_cdf(u)
                          + config.length_bias * math.log(max(len(answer), 1)))


def latency_for(sequences: list[str], config: RewardStandinConfig) -> float:
    if config.latency_mean <= 0:
        return 0.0
    sigma = config.latency_sigma
    u = min(max(_unit("rm-latency", sequences), 1e-12), 1 - 1e-12)
    return math.exp(math.log(config.latency_mean) - sigma**2 / 2 + sigma * NormalDist().inv_cdf(u))


class _RewardServer(_Server):
    def reset(self) -> None:
        super().reset()
        self.duplicated_bos = 0  # sequences that reached the model with two BOS tokens
        self.scored = 0  # sequences scored

    def _sequences(self, body: Any) -> list[str] | None:
        """The texts the request scores, as the model sees them: token ids as they are, a string tokenized with
        special tokens added (a BOS in front, as a Llama tokenizer does)."""
        items = body.get("input") if isinstance(body, dict) else None
        if isinstance(items, str) or (isinstance(items, list) and items and isinstance(items[0], int)):
            items = [items]
        if not isinstance(items, list) or not items:
            return None
        out = []
        for item in items:
            if isinstance(item, str):
                out.append(BOS + item)
            elif isinstance(item, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in item):
                out.append(detokenize(item))
            else:
                return None
        return out

    async def classify(self, request: Request) -> Response:
        return await self._score(request, "probs")

    async def pooling(self, request: Request) -> Response:
        return await self._score(request, "data")

    async def _score(self, request: Request, field: str) -> Response:
        now = time.time()
        self.requests += 1
        self.first_request_at = self.first_request_at or now
        self.last_request_at = now
        status = 499
        try:
            response = await self._answer(request, field)
            status = response.status_code
            return response
        finally:
            self.completed += 1
            self.by_status[str(status)] = self.by_status.get(str(status), 0) + 1

    async def _answer(self, request: Request, field: str) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "the body is not JSON", "invalid_request_error")
        sequences = self._sequences(body)
        if sequences is None:
            return _error(400, "'input' must be a string, token ids, or a list of them", "invalid_request_error")
        counts = [len(tokenize(s)) for s in sequences]
        if max(counts) > self.config.max_model_len:
            return _error(400, f"This model's maximum context length is {self.config.max_model_len} tokens. However, "
                               f"you requested {max(counts)} tokens in the input.", "BadRequestError")
        if not await self.serve_in_slot(request, latency_for(sequences, self.config)):
            if self.closing.done():
                return _error(503, "SIMULATED stand-in shutting down", "service_unavailable")
            return Response(status_code=499)
        data = []
        for i, text in enumerate(sequences):
            self.duplicated_bos += text.startswith(BOS + BOS)
            turns = turns_of(text)
            prompt = next((c for r, c in reversed(turns[:-1]) if r == "user"), "")
            answer = turns[-1][1] if turns and turns[-1][0] == "assistant" else text
            score = score_for(prompt, answer, self.config)
            self.scored += 1
            data.append({"index": i, "object": "classification" if field == "probs" else "pooling",
                         **({"label": "LABEL_0", "num_classes": 1} if field == "probs" else {}),
                         # the raw score: vLLM's name for the values whether an activation applied or not
                         field: [score]})
        return _json({"id": f"classify-standin-{uuid.uuid4().hex}", "object": "list", "created": int(time.time()),
                      "model": self.config.model, "data": data,
                      "usage": {"prompt_tokens": sum(counts), "total_tokens": sum(counts), "completion_tokens": 0}})

    async def tokenize(self, request: Request) -> Response:
        """vLLM's POST /tokenize: `messages` rendered by the template (which opens with the BOS itself; special
        tokens added on top only when asked), or a `prompt` string (with a BOS added unless told not to)."""
        try:
            body = json.loads(await request.body())
            if "messages" in body:
                text = render([{"role": str(m["role"]), "content": str(m["content"])} for m in body["messages"]],
                              bool(body.get("add_generation_prompt", False)))
                extra = bool(body.get("add_special_tokens", False))
            else:
                text, extra = str(body["prompt"]), bool(body.get("add_special_tokens", True))
        except (ValueError, KeyError, TypeError):
            return _error(400, "'messages' must be a list of {role, content}, or give a 'prompt'",
                          "invalid_request_error")
        self.tokenize_requests += 1
        tokens = tokenize((BOS if extra else "") + text)
        return _json({"count": len(tokens), "max_model_len": self.config.max_model_len, "tokens": tokens})

    async def models(self, request: Request) -> Response:
        model = {"id": self.config.model, "object": "model", "created": self.started_at, "owned_by": "standin",
                 "root": ROOT, "max_model_len": self.config.max_model_len}
        return _json({"object": "list", "data": [model]})

    async def no_generation(self, request: Request) -> Response:
        return _error(404, "this server runs a pooling model (--runner pooling): it generates nothing",
                      "NotFoundError")

    async def stats(self, request: Request) -> Response:
        reply = await super().stats(request)
        body = orjson.loads(reply.body)
        if reply.status_code == 200:
            body.update(kind="reward-model", scored=self.scored, duplicated_bos=self.duplicated_bos)
        return _json(body, reply.status_code)


def create_app(config: RewardStandinConfig | None = None) -> Starlette:
    server = _RewardServer(config or RewardStandinConfig())
    app = Starlette(routes=[
        Route("/classify", server.classify, methods=["POST"]),
        Route("/v1/classify", server.classify, methods=["POST"]),
        Route("/pooling", server.pooling, methods=["POST"]),
        # a pooling server has no generation routes: vLLM registers them only for a generative model
        Route("/v1/chat/completions", server.no_generation, methods=["GET", "POST"]),
        *server_routes(server),
    ], exception_handlers=QUIET_ON_DISCONNECT)
    app.state.standin = server
    return app


def banner(config: RewardStandinConfig, host: str, port: int) -> str:
    return (f"REWARD-MODEL STAND-IN on http://{host}:{port} — scores are SIMULATED, not from {REAL_MODEL} or any "
            f"reward model\nstand-in config: {orjson.dumps(asdict(config)).decode()}")


def serve(config: RewardStandinConfig | None = None, host: str = "127.0.0.1", port: int = 8001) -> None:
    config = config or RewardStandinConfig()
    print(banner(config, host, port), file=sys.stderr, flush=True)
    _Uvicorn(uvicorn.Config(create_app(config), host=host, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=2)).run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Reward-model stand-in server (SIMULATED scores).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--config", default="{}", help="RewardStandinConfig fields as JSON")
    args = parser.parse_args(argv)
    serve(RewardStandinConfig(**json.loads(args.config)), host=args.host, port=args.port)


def serve_reward_model(*, port: int, host: str, capacity: int, length_bias: float, noise: float, weak_share: float,
                       seed: int, max_model_len: int) -> None:
    """`curate judge-standin --kind reward-model`: serve with the flags given (the reward model's own latency)."""
    from common.errors import InvalidInputError

    try:
        config = RewardStandinConfig(capacity=capacity, length_bias=length_bias, noise=noise, weak_share=weak_share,
                                     seed=seed, max_model_len=max_model_len)
    except ValueError as err:
        raise InvalidInputError(str(err)) from None
    serve(config, host=host, port=port)


class RewardStandinProcess(ManagedServer):
    """The reward-model stand-in as a subprocess for a `with` block; `.url` is its OpenAI base (`.../v1`)."""

    def __init__(self, config: RewardStandinConfig | None = None, port: int | None = None, host: str = "127.0.0.1"):
        self.config = config or RewardStandinConfig()
        self.port = port or _free_port(host)
        self.base = f"http://{host}:{self.port}"
        self.url = f"{self.base}/v1"
        root = str(Path(__file__).resolve().parents[1])
        command = [sys.executable, "-m", "testing.reward_model_standin", "--host", host, "--port", str(self.port),
                   "--config", json.dumps(asdict(self.config))]
        super().__init__(command, self.base, startup_timeout=60, name="reward-model stand-in", forward_log=True,
                         env={"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)})

    def stats(self) -> dict:
        import urllib.request

        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.base}/stats", timeout=10) as reply:
            return orjson.loads(reply.read())


if __name__ == "__main__":
    main()
