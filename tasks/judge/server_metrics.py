"""What the judge servers measured of a run, from their Prometheus `/metrics` read before and after it.

vLLM counts every request's prompt and generated tokens, the prompt tokens its prefix cache was asked for and
found (`vllm:prefix_cache_queries_total`, `vllm:prefix_cache_hits_total`, in tokens), and the time requests
spent in the server (the sum of `vllm:e2e_request_latency_seconds`). The difference of two readings is what
this run cost the server, as long as nothing else used it meanwhile (the report says it is a difference).
A server without these counters (another OpenAI-compatible server, the stand-in) reports nothing measured.
"""

from __future__ import annotations

import re
from typing import Any

import httpx2

from common.tls import tls_context
from tasks.judge.preflight import server_root

COUNTERS = {
    "prompt_tokens": "vllm:prompt_tokens_total",
    "generation_tokens": "vllm:generation_tokens_total",
    "prefix_cache_queries": "vllm:prefix_cache_queries_total",
    "prefix_cache_hits": "vllm:prefix_cache_hits_total",
    "server_request_seconds": "vllm:e2e_request_latency_seconds_sum",
    "server_requests": "vllm:e2e_request_latency_seconds_count",
}
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([0-9.eE+-]+|NaN|[+-]Inf)\s*$", re.M)
_BLOCK = re.compile(r'block_size="(\d+)"')
DEFAULT_BLOCK = 16  # vLLM's default KV-cache block, where the server does not say


def parse_metrics(text: str) -> dict[str, float]:
    """The counters above, each summed over its label sets (models, engines); absent ones are left out."""
    wanted = {v: k for k, v in COUNTERS.items()}
    found: dict[str, float] = {}
    for name, _labels, value in _SAMPLE.findall(text):
        key = wanted.get(name)
        if key is not None:
            try:
                found[key] = found.get(key, 0.0) + float(value)
            except ValueError:
                continue
    return found


def block_size(text: str) -> int | None:
    """The KV-cache block size vLLM reports in `vllm:cache_config_info` (its prefix cache works in blocks)."""
    for line in text.splitlines():
        if line.startswith("vllm:cache_config_info"):
            m = _BLOCK.search(line)
            if m:
                return int(m.group(1))
    return None


def read_metrics(url: str, timeout: float = 5.0) -> str | None:
    """An endpoint's /metrics text, or None when it has none or does not answer."""
    try:
        reply = httpx2.get(f"{server_root(url)}/metrics", timeout=timeout, verify=tls_context())
    except httpx2.HTTPError:
        return None
    return reply.text if reply.status_code == 200 else None


def snapshot(urls: list[str]) -> dict[str, str | None]:
    return {u: read_metrics(u) for u in urls}


def run_metrics(before: dict[str, str | None], after: dict[str, str | None]) -> dict[str, Any]:
    """What the servers measured between two snapshots, summed over endpoints; `measured` False when no
    endpoint has the counters."""
    totals: dict[str, float] = {}
    measured = []
    for url, text in after.items():
        start, end = parse_metrics(before.get(url) or ""), parse_metrics(text or "")
        if "prompt_tokens" not in end:
            continue
        measured.append(url)
        for key, value in end.items():
            totals[key] = totals.get(key, 0.0) + max(0.0, value - start.get(key, 0.0))
    if not measured:
        return {"measured": False}
    out: dict[str, Any] = {"measured": True, "endpoints": measured, "basis": "difference of /metrics before and "
                           "after the run (other clients of the same servers would be counted too)"}
    for key in COUNTERS:
        if key in totals:
            out[key] = round(totals[key], 3) if key == "server_request_seconds" else int(totals[key])
    queries = totals.get("prefix_cache_queries")
    if queries:
        out["prefix_cache_hit_rate"] = round(totals.get("prefix_cache_hits", 0.0) / queries, 4)
    return out


class PrefixCacheModel:
    """What an unbounded prefix cache of whole KV blocks could serve of each prompt, given every prompt sent
    before it (vLLM's own scheme: a block is found by the hash of its tokens and of all blocks before it).
    The attainable hit rate a real server's cache, with its evictions, can at best reach."""

    def __init__(self, block: int, max_blocks: int = 2_000_000):
        self.block = block
        self.max_blocks = max_blocks  # past it the model forgets, as a full cache would
        self.seen: set[int] = set()
        self.tokens = 0  # prompt tokens offered
        self.cacheable = 0  # of them, servable from earlier prompts

    def offer(self, ids: list[int]) -> int:
        """Count one prompt (its token ids) and return the tokens the cache could serve of it."""
        b, h, hits, full = self.block, 0, 0, len(ids) // self.block
        hashes = []
        for i in range(full):
            h = hash((h, tuple(ids[i * b:(i + 1) * b])))
            hashes.append(h)
            if hits == i and h in self.seen:
                hits += 1
        if hits and hits * b >= len(ids):
            hits -= 1  # the server computes at least the prompt's last token
        if len(self.seen) > self.max_blocks:
            self.seen.clear()
        self.seen.update(hashes)
        self.tokens += len(ids)
        self.cacheable += hits * b
        return hits * b

    @property
    def hit_rate(self) -> float | None:
        return round(self.cacheable / self.tokens, 4) if self.tokens else None
