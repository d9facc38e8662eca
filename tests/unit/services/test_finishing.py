"""``finish``: a batch runs to its end even when the task awaiting it is cancelled (the
process stopping), and says so when it cannot."""

from __future__ import annotations

import asyncio

import pytest

from services.common.finishing import Unfinished, finish


async def work(seconds: float, log: list[str], fail: bool = False) -> str:
    log.append("began")
    await asyncio.sleep(seconds)
    if fail:
        raise RuntimeError("publish failed")
    log.append("ended")
    return "done"


async def test_without_a_cancel_it_is_a_plain_await() -> None:
    log: list[str] = []
    assert await finish(work(0, log), 1) == "done"
    with pytest.raises(RuntimeError, match="publish failed"):
        await finish(work(0, log, fail=True), 1)


@pytest.mark.parametrize("cancels", [1, 3])
async def test_a_cancelled_caller_waits_for_the_work_then_is_cancelled(cancels: int) -> None:
    log: list[str] = []
    caller = asyncio.create_task(finish(work(0.2, log), 5))
    await asyncio.sleep(0.05)
    for _ in range(cancels):
        caller.cancel()
        await asyncio.sleep(0.01)
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert log == ["began", "ended"]


async def test_work_that_outlasts_the_grace_is_cancelled_and_reported() -> None:
    log: list[str] = []
    caller = asyncio.create_task(finish(work(10, log), 0.1))
    await asyncio.sleep(0.05)
    caller.cancel()
    with pytest.raises(Unfinished, match=r"not finished within 0\.1 s"):
        await caller
    assert log == ["began"]


async def test_work_that_fails_after_a_cancel_is_reported() -> None:
    log: list[str] = []
    caller = asyncio.create_task(finish(work(0.1, log, fail=True), 5))
    await asyncio.sleep(0.05)
    caller.cancel()
    with pytest.raises(Unfinished, match="publish failed"):
        await caller
