"""The GenRM kind: Qwen3-Nemotron-235B-A22B-GenRM behind vLLM's OpenAI server (docs/genrm-protocol.md).

A judgment is one `chat.completions` request showing both answers in one order (`build_messages`); its reply is
a reasoning trace and `{"score_1", "score_2", "ranking"}`, read by `parse_completion` and mapped to answer A's
side (`to_a_side`: a margin from +2.5 to -2.5). A slot is (order, sample). Its preflight renders a probe pair
through the server's chat template and looks for both answers in it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tasks.judge.genrm import ORDERS, ParseFailure, build_messages, parse_completion, split_trace, to_a_side
from tasks.judge.kinds.protocol import Reading, Slot
from tasks.judge.preflight import TemplateProbe, count_prompt_tokens, probe_template
from tasks.judge.replies import BadResponse, cap_text, read_completion


class GenRM:
    name: ClassVar[str] = "genrm"
    path: ClassVar[str] = "/v1/chat/completions"
    said: ClassVar[str] = "the GenRM"
    identity: ClassVar[tuple[str, ...]] = ("model", "served_revision", "prompt_version", "temperature", "top_p",
                                           "max_tokens", "simulated", "template", "weights")

    def slots(self, samples: int = 1) -> list[Slot]:
        return [(order, i) for i in range(samples) for order in ORDERS]  # a pair's orders side by side

    def messages(self, history: list[dict[str, str]], response_a: str, response_b: str,
                 slot: Slot) -> tuple[list[dict[str, str]], Any]:
        return build_messages(history, response_a, response_b, slot[0]), None

    async def count_tokens(self, http: Any, url: str, model: str, messages: list[dict[str, str]],
                           payload: Any) -> tuple[int, list[int] | None]:
        return await count_prompt_tokens(http, url, model, messages)

    async def send(self, endpoint: Any, config: Any, messages: list[dict[str, str]], payload: Any,
                   seed: int | None) -> bytes:
        raw = await endpoint.client.chat.completions.with_raw_response.create(
            model=config.model,
            messages=messages,  # custom roles pass through as plain dicts
            temperature=config.temperature,
            top_p=config.top_p,
            max_tokens=config.max_tokens,
            **({} if seed is None else {"seed": seed}),
        )
        return raw.http_response.content

    def read(self, body: Any, slot: Slot) -> Reading:
        import orjson

        reply = read_completion(body)
        if isinstance(reply, BadResponse):
            return Reading("failed", failure_reason=reply.reason, error=reply.detail,
                           raw_text=cap_text(orjson.dumps(body).decode()))
        parsed = parse_completion(reply.content, reply.finish_reason, reply.reasoning)
        answer, trace = split_trace(reply.content, reply.reasoning)
        common = dict(raw_text=cap_text(answer), reasoning=cap_text(trace), finish_reason=reply.finish_reason,
                      tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, served_model=reply.model)
        if isinstance(parsed, ParseFailure):
            return Reading("failed", failure_reason=parsed.reason, error=parsed.detail, **common)
        return Reading("ok", verdict=parsed, side=to_a_side(parsed, slot[0]), **common)

    def probe(self, url: str, model: str, timeout: float) -> TemplateProbe:
        return probe_template(url, model, timeout)


GENRM = GenRM()
