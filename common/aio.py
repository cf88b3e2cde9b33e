"""`asyncio.run` for the event loops a stop signal may interrupt.

A signal handler raises in whatever the main thread runs at that moment. asyncio passes KeyboardInterrupt and
SystemExit on from a callback, but any other BaseException a callback raises is logged ("Exception in callback")
and the loop goes on. Prefect's SIGTERM handler raises `TerminationSignal`, a BaseException: a SIGTERM that landed
while the loop ran a callback (a socket read, a timer, a task's done callback) was lost, and a judge run went on
to its end and the flow to its version. `run` stops the coroutine on such an exception and raises it, so the flow
unwinds as Prefect means it to (docs/interruptions.md, "Ctrl-C and SIGTERM").
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def is_stop(exc: object) -> bool:
    """A BaseException that is neither an Exception nor a cancellation: a stop signal's (Prefect's
    TerminationSignal and kin)."""
    return isinstance(exc, BaseException) and not isinstance(exc, (Exception, asyncio.CancelledError))


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to its end as `asyncio.run` does; a stop signal's exception that a callback met cancels it and
    is raised here instead of being logged and lost."""
    caught: list[BaseException] = []
    task: asyncio.Task | None = None

    async def watched() -> T:
        nonlocal task
        task = asyncio.current_task()
        return await main

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if not is_stop(exc):
            loop.default_exception_handler(context)
            return
        if not caught:
            caught.append(exc)
            if task is not None:
                task.cancel()

    with asyncio.Runner() as runner:
        runner.get_loop().set_exception_handler(handler)
        try:
            result = runner.run(watched())
        except BaseException as exc:
            if caught and exc is not caught[0]:
                raise caught[0] from exc  # what the cancellation raised on the way is the stop's doing
            raise
    if caught:  # `main` finished in spite of the cancellation
        raise caught[0]
    return result
