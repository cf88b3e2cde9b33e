"""`common.aio.run`: a stop signal's exception (a BaseException, as Prefect's SIGTERM bridge raises) that lands in
one of the loop's callbacks stops the coroutine and is raised, where `asyncio.run` logs it and goes on."""

from __future__ import annotations

import asyncio
import logging

import pytest

from common import aio


class Stop(BaseException):
    pass


def _stop() -> None:
    raise Stop("SIGTERM")


async def _stopped_in_a_callback(seconds: float = 5.0, swallow: bool = False) -> str:
    asyncio.get_running_loop().call_soon(_stop)
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if not swallow:
            raise
    return "finished"


def test_asyncio_run_alone_loses_the_stop():
    # the behaviour aio.run exists for: this one running to its end is why a SIGTERM could be lost
    assert asyncio.run(_stopped_in_a_callback(0.05)) == "finished"


def test_a_stop_in_a_callback_stops_the_coroutine_and_is_raised():
    with pytest.raises(Stop, match="SIGTERM"):
        aio.run(asyncio.wait_for(_stopped_in_a_callback(5.0), 2.0))  # stopped, not timed out


def test_a_coroutine_that_swallows_the_cancellation_still_raises_the_stop():
    with pytest.raises(Stop):
        aio.run(_stopped_in_a_callback(5.0, swallow=True))


def test_an_ordinary_error_in_a_callback_is_logged_and_the_run_goes_on(caplog):
    async def main():
        asyncio.get_running_loop().call_soon(lambda: 1 / 0)
        await asyncio.sleep(0.05)
        return 7

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        assert aio.run(main()) == 7
    assert "ZeroDivisionError" in caplog.text


def test_results_and_errors_of_the_coroutine_pass_through():
    async def fails():
        raise ValueError("bad row")

    assert aio.run(asyncio.sleep(0, result="ok")) == "ok"
    with pytest.raises(ValueError, match="bad row"):
        aio.run(fails())


def test_a_cancellation_met_in_a_callback_is_not_taken_for_a_stop(caplog):
    async def main():
        def cancelled() -> None:
            raise asyncio.CancelledError()

        asyncio.get_running_loop().call_soon(cancelled)
        await asyncio.sleep(0.05)
        return "finished"

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        assert aio.run(main()) == "finished"
