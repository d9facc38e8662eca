"""``queues.figures.TimedCache`` with ``stale_ok``: a value past its time is answered at once and
computed again in the background (``GET /v1/queues`` answers from memory), once, and
the new value replaces it; a failed refresh keeps the old one; a value too stale is
waited for."""

from __future__ import annotations

import asyncio

import pytest

from services.gateway.queues.figures import TimedCache


async def test_a_stale_value_is_answered_at_once_and_refreshed_in_the_background() -> None:
    cache = TimedCache(0.05, stale_s=60.0)
    calls = 0
    gate = asyncio.Event()

    async def compute() -> int:
        nonlocal calls
        calls += 1
        if calls > 1:
            await gate.wait()
        return calls

    assert await cache.get("k", compute, stale_ok=True) == 1
    await asyncio.sleep(0.06)
    answers = [await asyncio.wait_for(cache.get("k", compute, stale_ok=True), 0.05)
               for _ in range(3)]
    assert answers == [1, 1, 1] and calls == 2  # one refresh, not waited for
    gate.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert await cache.get("k", compute, stale_ok=True) == 2
    assert await cache.get("k", compute) == 2  # fresh: no new computation
    assert calls == 2


async def test_a_failed_refresh_keeps_the_value_and_a_too_stale_one_is_waited_for() -> None:
    cache = TimedCache(0.01, stale_s=0.2)
    results: list[int | Exception] = [1, TimeoutError("down"), 3]

    async def compute() -> int:
        result = results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result

    assert await cache.get("k", compute, stale_ok=True) == 1
    await asyncio.sleep(0.02)
    assert await cache.get("k", compute, stale_ok=True) == 1  # refresh starts, fails
    await asyncio.sleep(0.25)
    assert await cache.get("k", compute, stale_ok=True) == 3  # too stale: waited for
    with pytest.raises(IndexError):  # not stale_ok: a stale value is computed again
        await asyncio.sleep(0.02)
        await cache.get("k", compute)
