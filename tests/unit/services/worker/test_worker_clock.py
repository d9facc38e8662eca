"""A worker measures only durations, on its monotonic clock: an attempt's timeout counts
from when the worker took its dispatch, and the dispatch's ``at_ms`` (the coordinator's
clock, which this machine's may differ from by minutes) is never compared with this
machine's clock; over fake Kafka clients."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from worker_fakes import (
    QUEUE,
    TP0,
    FakeConsumer,
    FakeProducer,
    Sent,
    dispatch,
    make_attempt,
    outcomes,
    records,
    serving,
    settings,
    started,
    wait_until,
)

from headwater import task
from services.common.clock import now_ms
from services.worker.app import Worker
from services.worker.attempt import Attempt

SKEWS = [300_000, -300_000]
"""How far the coordinator's clock is from this machine's, ms."""


@task(name="unit.clock.nap", queue=QUEUE)
async def nap(seconds: float) -> float:
    """Sleep ``seconds``."""
    await asyncio.sleep(seconds)
    return seconds


@pytest.mark.parametrize("skew", SKEWS)
async def test_a_dispatch_runs_whatever_its_time(skew: int) -> None:
    coordinators = dispatch("unit.ok", {"n": 3}, workflow_id="a", timeout_s=5,
                            at_ms=now_ms() + skew)
    consumer = FakeConsumer({TP0: records(coordinators)})
    producer = FakeProducer()
    async with serving(Worker(settings()), consumer, producer):
        await wait_until(lambda: "a" in outcomes(producer))
    assert started(producer) == ["a"]
    assert outcomes(producer)["a"].output == 3


@pytest.mark.parametrize("skew", SKEWS)
async def test_an_attempt_times_out_its_timeout_after_it_was_taken(skew: int) -> None:
    coordinators = dispatch("unit.clock.nap", {"seconds": 30}, workflow_id="a",
                            timeout_s=0.5, at_ms=now_ms() + skew)
    consumer = FakeConsumer({TP0: records(coordinators)})
    producer = FakeProducer()
    began = time.monotonic()
    async with serving(Worker(settings()), consumer, producer):
        await wait_until(lambda: "a" in outcomes(producer))
    took = time.monotonic() - began
    assert 0.45 <= took < 3.0, took
    failed = outcomes(producer)["a"]
    assert (failed.error, failed.error_type, failed.retryable) == (
        "timed out after 0.5 s", "TimeoutError", True)


async def test_the_time_left_counts_from_when_the_dispatch_was_taken() -> None:
    long_ago = dispatch("unit.ok", timeout_s=2.0, at_ms=now_ms() - 3_600_000)
    with ThreadPoolExecutor(1) as pool:
        taken = Attempt(long_ago, Sent(), pool, 1 << 20, taken_at_s=time.monotonic() - 1.5)
        left = taken.remaining_s()
        assert left is not None and 0.4 < left <= 0.5
        fresh = make_attempt(long_ago, pool).remaining_s()
        assert fresh is not None and 1.9 < fresh <= 2.0
        assert make_attempt(dispatch("unit.ok"), pool).remaining_s() is None
