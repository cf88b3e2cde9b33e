"""Before any generation request: does the server's context hold the judge's budget, and does its chat template
show the judge both answers? And, per request, the prompt counted as the server counts it.

vLLM reports each model's `max_model_len` in `GET /v1/models`, and `POST /tokenize` with `messages` renders the
chat template exactly as a chat request would and returns its token ids. A probe pair with two sentinel answers
must come back with both sentinels in the rendered prompt (`POST /detokenize`): the base Qwen3 thinking template
silently drops the custom roles `response_1` and `response_2`, and a server launched with it would return
well-formed verdicts about nothing. The probe's token ids are fingerprinted into the judge configuration, so a
server with another template or tokenizer never answers from the cache.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

from common.tls import tls_context
from tasks.judge.genrm import build_messages

PROBE_HISTORY = [{"role": "user", "content": "Which of the two responses answers this question better?"}]
SENTINELS = {"response_1": "Sentinel answer QZX-ONE.", "response_2": "Sentinel answer QZX-TWO."}
# What a 400 says when a request does not fit the served context (vLLM's wordings across releases)
_CONTEXT_ERRORS = re.compile(
    r"maximum context length|max_model_len|context length|longer than the model|too many tokens|"
    r"max_tokens.{0,40}(too large|cannot be greater)|prompt is too long", re.IGNORECASE)


def server_root(url: str) -> str:
    """The server's root from its OpenAI base URL (vLLM serves /tokenize, /detokenize and /metrics there)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def is_context_error(message: str) -> bool:
    """Whether a 400's message says the request does not fit the served context."""
    return bool(_CONTEXT_ERRORS.search(message or ""))


@dataclass(frozen=True)
class TemplateProbe:
    """What the server's /tokenize said of the probe pair."""

    url: str
    tokenizes: bool  # the server has /tokenize (else budgets are estimated and the template unchecked)
    prompt_tokens: int | None = None
    fingerprint: str | None = None  # of the rendered probe's token ids
    missing: tuple[str, ...] = ()  # roles whose sentinel answer the rendered prompt lacks
    error: str | None = None  # why the probe could not be made


def fingerprint(token_ids: list[int]) -> str:
    return "tpl-" + hashlib.blake2b(json.dumps(token_ids).encode(), digest_size=8).hexdigest()


def _post(client: httpx2.Client, url: str, body: dict[str, Any]) -> tuple[int, Any]:
    reply = client.post(url, json=body)
    try:
        return reply.status_code, reply.json()
    except ValueError:
        return reply.status_code, None


def probe_template(url: str, model: str, timeout: float, chat_template: str | None = None) -> TemplateProbe:
    """Render the probe pair through the server's chat template (or `chat_template`, where the server trusts
    one sent with a request) and look for both answers in it."""
    root = server_root(url)
    messages = build_messages(PROBE_HISTORY, SENTINELS["response_1"], SENTINELS["response_2"], "ab")
    body = {"model": model, "messages": messages, "add_generation_prompt": True}
    if chat_template is not None:
        body["chat_template"] = chat_template
    try:
        with httpx2.Client(timeout=timeout, verify=tls_context()) as client:
            status, body = _post(client, f"{root}/tokenize", body)
            if status in (404, 405):
                return TemplateProbe(url, tokenizes=False, error=f"no /tokenize (HTTP {status})")
            if status != 200 or not isinstance(body, dict) or not isinstance(body.get("tokens"), list):
                detail = json.dumps(body)[:200] if body is not None else "not JSON"
                return TemplateProbe(url, tokenizes=True, error=f"/tokenize answered HTTP {status}: {detail}")
            tokens = body["tokens"]
            status, text = _post(client, f"{root}/detokenize", {"model": model, "tokens": tokens})
            if status != 200 or not isinstance(text, dict) or not isinstance(text.get("prompt"), str):
                return TemplateProbe(url, tokenizes=True, error=f"/detokenize answered HTTP {status}")
    except httpx2.HTTPError as err:
        return TemplateProbe(url, tokenizes=True, error=f"{type(err).__name__}: {str(err)[:160]}")
    missing = tuple(role for role, sentinel in SENTINELS.items() if sentinel not in text["prompt"])
    return TemplateProbe(url, True, int(body.get("count", len(tokens))), fingerprint(tokens), missing)


def api_problem(url: str, path: str, other_paths: Sequence[str], timeout: float) -> str | None:
    """Why a server does not serve a judge kind's API (`path`, the endpoint its judgments are asked on), asked with
    no judgment: `GET` on a route that takes only `POST` answers 405 where the server has the route and 404 where
    it has none (vLLM registers the chat routes only for a generative model, the classification and pooling routes
    only for a pooling one, `--runner pooling`). Refused only on both signs: 404 on `path` and 405 on one of
    `other_paths` (the other kinds' routes), so a server that answers 404 to every GET it has no handler for (a
    proxy, a hand-written server) is not taken for the other kind. None: it has the route, or did not say; the
    kind's template probe and the model check still apply."""
    try:
        with httpx2.Client(timeout=timeout, verify=tls_context()) as client:
            if client.get(f"{server_root(url)}{path}").status_code != 404:
                return None
            other = next((p for p in other_paths if client.get(f"{server_root(url)}{p}").status_code == 405), None)
    except httpx2.HTTPError:
        return None  # it answered /v1/models; what it cannot answer here its judgments will say
    return f"GET {path} answered HTTP 404, GET {other} answered 405" if other else None


def context_problem(url: str, served: int | None, max_model_len: int, max_tokens: int) -> str | None:
    """Why a server's context cannot hold the judge's budget (prompt budget + max_tokens), or None."""
    if served is None or served >= max_model_len:
        return None
    return (f"{url} serves a context of {served} tokens, but the judge needs {max_model_len} "
            f"({max_model_len - max_tokens} for the prompt + {max_tokens} for the answer): start vLLM with "
            f"--max-model-len {max_model_len}, or lower CURATE_JUDGE_MAX_MODEL_LEN to {served} (and "
            f"CURATE_JUDGE_MAX_TOKENS to fit)")


async def count_prompt_tokens(client: Any, url: str, model: str,
                              messages: list[dict[str, str]]) -> tuple[int, list[int] | None]:
    """A request's prompt tokens as the server counts them (its /tokenize with the same messages), and their
    ids when it gives them."""
    reply = await client.post(f"{server_root(url)}/tokenize",
                              json={"model": model, "messages": messages, "add_generation_prompt": True})
    reply.raise_for_status()
    body = reply.json()
    count = body.get("count") if isinstance(body, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(f"/tokenize gave no count: {str(body)[:120]}")
    tokens = body.get("tokens")
    return count, tokens if isinstance(tokens, list) else None
