"""The reward-model kind: a sequence-classification reward model served by vLLM with `--runner pooling`
(Skywork-Reward-V2 and the like), as its model cards serve it.

A judgment scores both answers of a pair once each, with no order: its one slot is (`none`, 0). Each answer is the
pair's history plus that answer as an assistant turn, rendered by the server's own chat template (`POST /tokenize`
with the messages, no generation prompt, no system prompt of the project's own); the token ids that come back are
sent as they are to vLLM's classification endpoint (`POST /classify`, both sequences in one request, with
`use_activation: false` so the score is the raw logit). Sending the ids, not a string, means the tokenizer never
adds a second BOS to a template that already opened with one, and the prompt counted is exactly the prompt scored.
The verdict on the canonical pair is the difference of the two raw scores, `margin = score(A) - score(B)`, on the
reward model's own scale; the two scores are its payload (stored as the judgment's `raw_text`, as JSON).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

from common.reasons import JudgeFailure
from common.tls import tls_context
from tasks.judge.kinds.protocol import Reading, Slot
from tasks.judge.preflight import TemplateProbe, fingerprint, server_root

NO_ORDER = "none"  # a reward model scores each answer alone: its one slot has no order
PROMPT_VERSION = "rm-history-plus-answer-v1"  # each answer as the assistant turn after the pair's history
PROBE_HISTORY = [{"role": "user", "content": "Which of the two responses answers this question better?"}]
PROBE_ANSWER = "Sentinel answer QZX-RM."


@dataclass(frozen=True, slots=True)
class Scores:
    """The reward model's verdict as it gave it: one raw score per answer."""

    score_a: float
    score_b: float
    score_1: None = None  # the GenRM's columns: none of a reward model's
    score_2: None = None
    ranking: None = None


@dataclass(frozen=True, slots=True)
class ScoreMargin:
    """A reward-model verdict on answer A's side: its margin, the difference of the raw scores."""

    margin: float
    score_a: None = None  # the GenRM's 1-5 scores: a reward model has none
    score_b: None = None
    ranking_a: None = None


@dataclass
class Conversations:
    """What a reward-model judgment sends: the two conversations, and their token ids once the server rendered
    them (counted once, sent as counted)."""

    a: list[dict[str, str]]
    b: list[dict[str, str]]
    ids: list[list[int]] | None = field(default=None)


def conversation(history: list[dict[str, str]], answer: str) -> list[dict[str, str]]:
    """The history, then `answer` as the assistant's turn."""
    if not history or history[-1]["role"] != "user":
        raise ValueError("the history must end with a user turn")
    return [{"role": m["role"], "content": m["content"]} for m in history] + [{"role": "assistant", "content": answer}]


async def _render(http: Any, url: str, model: str, messages: list[dict[str, str]]) -> list[int]:
    reply = await http.post(f"{server_root(url)}/tokenize", json={
        "model": model, "messages": messages, "add_generation_prompt": False, "add_special_tokens": False})
    reply.raise_for_status()
    body = reply.json()
    tokens = body.get("tokens") if isinstance(body, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise ValueError(f"/tokenize gave no token ids: {str(body)[:120]}")
    return tokens


def _score(entry: Any) -> float | None:
    """One `data` entry's raw score: its one class's value (`probs`, vLLM's name whatever the activation)."""
    if not isinstance(entry, dict):
        return None
    values = entry.get("probs", entry.get("data"))
    if isinstance(values, list) and len(values) == 1:
        values = values[0]
    if isinstance(values, bool) or not isinstance(values, (int, float)) or not math.isfinite(values):
        return None
    return float(values)


class RewardModel:
    name: ClassVar[str] = "reward_model"
    path: ClassVar[str] = "/classify"
    said: ClassVar[str] = "the reward model"
    identity: ClassVar[tuple[str, ...]] = ("kind", "model", "served_revision", "prompt_version", "simulated",
                                           "template", "weights")

    def slots(self, samples: int = 1) -> list[Slot]:
        return [(NO_ORDER, 0)]

    def messages(self, history: list[dict[str, str]], response_a: str, response_b: str,
                 slot: Slot) -> tuple[list[dict[str, str]], Any]:
        a, b = conversation(history, response_a), conversation(history, response_b)
        return a, Conversations(a, b)

    async def count_tokens(self, http: Any, url: str, model: str, messages: list[dict[str, str]],
                           payload: Conversations) -> tuple[int, list[int] | None]:
        payload.ids = [await _render(http, url, model, payload.a), await _render(http, url, model, payload.b)]
        return max(len(ids) for ids in payload.ids), None

    async def send(self, endpoint: Any, config: Any, messages: list[dict[str, str]], payload: Conversations,
                   seed: int | None) -> bytes:
        if payload.ids is None:
            await self.count_tokens(endpoint.http, endpoint.url, config.model, messages, payload)
        reply = await endpoint.http.post(f"{server_root(endpoint.url)}{self.path}", json={
            "model": config.model, "input": payload.ids, "use_activation": False})
        reply.raise_for_status()
        return reply.content

    def read(self, body: Any, slot: Slot) -> Reading:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != 2:
            return Reading("failed", failure_reason=JudgeFailure.BAD_RESPONSE.of("data"),
                           error=f"{type(data).__name__}, not a list of two scores",
                           raw_text=orjson.dumps(body).decode()[:2000])
        ordered = sorted(data, key=lambda e: e.get("index", 0) if isinstance(e, dict) else 0)
        a, b = (_score(e) for e in ordered)
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        tokens = usage.get("prompt_tokens")
        common = dict(tokens_in=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0,
                      served_model=body.get("model") if isinstance(body.get("model"), str) else None)
        if a is None or b is None:
            return Reading("failed", failure_reason=JudgeFailure.BAD_RESPONSE.of("score"),
                           error="a score is not one finite number", raw_text=orjson.dumps(data).decode()[:2000],
                           **common)
        raw = orjson.dumps({"score_a": a, "score_b": b}).decode()
        return Reading("ok", verdict=Scores(a, b), side=ScoreMargin(a - b), raw_text=raw, **common)

    def probe(self, url: str, model: str, timeout: float) -> TemplateProbe:
        """Render a probe conversation: the answer must be in the prompt, and the prompt must hold one BOS at
        most (a template that opens with one, tokenized with special tokens added, would hold two)."""
        import httpx2

        messages = conversation(PROBE_HISTORY, PROBE_ANSWER)
        try:
            with httpx2.Client(timeout=timeout, verify=tls_context()) as client:
                reply = client.post(f"{server_root(url)}/tokenize", json={
                    "model": model, "messages": messages, "add_generation_prompt": False,
                    "add_special_tokens": False})
                if reply.status_code in (404, 405):
                    return TemplateProbe(url, tokenizes=False, error=f"no /tokenize (HTTP {reply.status_code})")
                body = reply.json() if reply.status_code == 200 else None
                if not isinstance(body, dict) or not isinstance(body.get("tokens"), list):
                    return TemplateProbe(url, tokenizes=True, error=f"/tokenize answered HTTP {reply.status_code}")
                tokens = body["tokens"]
                text = client.post(f"{server_root(url)}/detokenize", json={"model": model, "tokens": tokens})
                prompt = text.json().get("prompt") if text.status_code == 200 else None
        except (httpx2.HTTPError, ValueError) as err:
            return TemplateProbe(url, tokenizes=True, error=f"{type(err).__name__}: {str(err)[:160]}")
        if not isinstance(prompt, str):
            return TemplateProbe(url, tokenizes=True, error="/detokenize gave no prompt")
        missing = () if PROBE_ANSWER in prompt else ("assistant",)
        return TemplateProbe(url, True, len(tokens), fingerprint(tokens), missing)


REWARD_MODEL = RewardModel()
