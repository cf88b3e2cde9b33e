"""A hostile OpenAI-compatible judge server: plain asyncio HTTP/1.1, so that a reply can be anything at all
(a list for a body, 100 MB streamed, one byte a second, a 429 with `Retry-After`).

Each chat request is answered by the next entry of a script of reply kinds, cycling. Run it in a thread
(`HostileJudge(script).start()`) or as a process: `python -m tests.tasks.judge.hostile_judge --port P --script
deep_json,ok`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time

MODEL = "nvidia/Qwen3-Nemotron-235B-A22B-GenRM"
VERDICT = '{"score_1": 4, "score_2": 2, "ranking": 2}'
HUGE_BYTES = 100 * 2**20


def completion(content, **extra) -> dict:
    body = {"model": MODEL, "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7}}
    body.update(extra)
    return body


def _json(body) -> bytes:
    return json.dumps(body).encode()


# Reply kinds whose body is built whole: name -> (status, extra headers, body bytes)
SHAPES = {
    "ok": lambda: (200, {}, _json(completion("thinking</think>" + VERDICT))),
    "deep_json": lambda: (200, {}, _json(completion("t</think>" + "[" * 3000 + "]" * 3000))),
    "deep_json_object": lambda: (200, {}, _json(completion("t</think>" + '{"a": ' * 3000 + "1" + "}" * 3000))),
    "unclosed_braces": lambda: (200, {}, _json(completion("t</think>" + '{"a": [1, ' * 200_000))),
    "content_number": lambda: (200, {}, _json(completion(5))),
    "body_list": lambda: (200, {}, _json([completion("t</think>" + VERDICT)])),
    "choices_string": lambda: (200, {}, _json({"model": MODEL, "choices": "nope"})),
    "usage_string": lambda: (200, {}, _json(completion("t</think>" + VERDICT,
                                                      usage={"prompt_tokens": "12", "completion_tokens": 7}))),
    "not_json": lambda: (200, {}, b"<html>502 Bad Gateway</html>"),
    "deep_body": lambda: (200, {}, b"[" * 100_000 + b"]" * 100_000),
    "reasoning_null": lambda: (200, {}, _json({"model": MODEL, "choices": [{"message": {
        "role": "assistant", "content": VERDICT, "reasoning_content": None, "reasoning": "weighed both"},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 12, "completion_tokens": 7}})),
    "rate_limited": lambda: (429, {"Retry-After": "2"}, _json({"error": {"message": "slow down"}})),
    "unavailable": lambda: (503, {"Retry-After": "1"}, _json({"error": {"message": "warming up"}})),
}
STREAMED = ("huge", "huge_declared", "huge_error", "trickle")
KINDS = tuple(SHAPES) + STREAMED


class HostileJudge:
    """The server; `kinds_served` lists what each chat request got, `times` when it came (monotonic)."""

    def __init__(self, script: list[str], host: str = "127.0.0.1", port: int = 0):
        unknown = set(script) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown reply kinds {sorted(unknown)}; known: {KINDS}")
        self.script = script
        self.host, self.port = host, port
        self.kinds_served: list[str] = []
        self.times: list[float] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
            await reader.readexactly(int(headers.get("content-length", 0) or 0))
            if path.endswith("/models"):  # as vLLM started with `--model MODEL`: the judge's own weights
                await self._whole(writer, 200, {}, _json({"object": "list", "data": [{"id": MODEL, "object": "model",
                                                                                     "root": MODEL}]}))
            elif path.endswith("/chat/completions") and method == "POST":
                kind = self.script[len(self.kinds_served) % len(self.script)]
                self.kinds_served.append(kind)
                self.times.append(time.monotonic())
                await self._reply(writer, kind)
            else:
                await self._whole(writer, 404, {}, b"{}")
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                writer.close()
                await writer.wait_closed()
            except Exception:  # noqa: BLE001 - the client went away
                pass

    async def _whole(self, writer, status: int, headers: dict, body: bytes) -> None:
        head = [f"HTTP/1.1 {status} X", "Content-Type: application/json", f"Content-Length: {len(body)}",
                "Connection: close", *[f"{k}: {v}" for k, v in headers.items()]]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()

    async def _reply(self, writer, kind: str) -> None:
        if kind in SHAPES:
            await self._whole(writer, *SHAPES[kind]())
            return
        status = 500 if kind == "huge_error" else 200
        declared = {"huge_declared": f"Content-Length: {HUGE_BYTES}\r\n", "trickle": "Content-Length: 4096\r\n"}.get(kind, "")
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{declared}Connection: close\r\n\r\n"
                     .encode())
        if kind == "trickle":  # headers at once, then a byte a second, forever
            for _ in range(HUGE_BYTES):
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(1.0)
            return
        # 100 MB of one JSON string, made 1 MiB at a time: the server never holds it whole
        writer.write(b'{"model": "m", "choices": [{"message": {"content": "')
        chunk = b"x" * 2**20
        for _ in range(HUGE_BYTES // len(chunk)):
            writer.write(chunk)
            await writer.drain()
        writer.write(b'"}}]}')
        await writer.drain()

    async def _serve(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        async with self._server:
            await self._server.serve_forever()

    def start(self) -> HostileJudge:
        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._main = loop.create_task(self._serve())
            try:
                loop.run_until_complete(self._main)
            except asyncio.CancelledError:
                pass
            finally:  # connections still being served end with the server
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.close()

        self._thread = threading.Thread(target=run, daemon=True, name="hostile-judge")
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the hostile judge did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._main.cancel)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> HostileJudge:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--script", default="ok", help="reply kinds, comma-separated, served in turn: " + ", ".join(KINDS))
    args = parser.parse_args()
    server = HostileJudge(args.script.split(","), port=args.port)
    try:
        asyncio.run(server._serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
