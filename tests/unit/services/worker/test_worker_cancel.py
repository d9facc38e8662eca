"""Stopping cancelled attempts (``Worker.cancel``) and skipping dispatches that should not
run (cancelled already, or running or run here), over fake Kafka clients."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator

import pytest
from worker_fakes import (
    QUEUE,
    TP0,
    FakeConsumer,
    FakeProducer,
    dispatch,
    outcomes,
    records,
    serving,
    settings,
    started,
    wait_until,
)

from headwater import TaskContext, task
from headwater.core import events as ev
from headwater.errors import AttemptCancelled
from services.common.clock import now_ms
from services.worker.app import Worker

RELEASE = threading.Event()
STOPPED: list[str] = []


@task(name="unit.cancel.anap", queue=QUEUE)
async def anap(seconds: float) -> float:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        STOPPED.append("anap")
        raise
    return seconds


@task(name="unit.cancel.cooperative", queue=QUEUE)
def cooperative(ctx: TaskContext) -> str:
    try:
        while True:
            ctx.heartbeat()
            time.sleep(0.01)
    except AttemptCancelled as e:
        STOPPED.append(str(e))
        raise


@task(name="unit.cancel.ticker", queue=QUEUE)
def ticker() -> Iterator[int]:
    i = 0
    try:
        while True:
            time.sleep(0.02)
            yield i
            i += 1
    finally:
        STOPPED.append(f"ticker closed after {i}")


@task(name="unit.cancel.stubborn", queue=QUEUE)
def stubborn(ctx: TaskContext) -> str:
    RELEASE.wait(10)  # ignores the stop flag until released
    return f"stop requested: {ctx.stop_requested}"


def cancel(workflow_id: str, reason: str = "workflow cancelled") -> ev.TaskCancelled:
    return ev.TaskCancelled(workflow_id, "n", None, 1, now_ms(), reason)


@pytest.fixture(autouse=True)
def _reset() -> None:
    STOPPED.clear()
    RELEASE.clear()


async def test_a_cancelled_async_attempt_stops_without_an_outcome(
        caplog: pytest.LogCaptureFixture) -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.cancel.anap", {"seconds": 30},
                                                   workflow_id="a"),
                                          dispatch("unit.ok", {"n": 2}, workflow_id="b"))})
    producer = FakeProducer()
    worker = Worker(settings(concurrency=1))
    with caplog.at_level(logging.INFO, logger="headwater.worker"):
        async with serving(worker, consumer, producer):
            await wait_until(lambda: started(producer) == ["a"])
            worker.cancel(cancel("a"))
            await wait_until(lambda: "b" in outcomes(producer))  # its slot was freed
            await wait_until(lambda: consumer.committed.get(TP0) == 2)
            # The attempt's own loop runs the cancelled coroutine's handler in its time.
            await wait_until(lambda: STOPPED == ["anap"] and not worker.running)
    assert "a" not in outcomes(producer) and outcomes(producer)["b"].output == 2
    lines = [r.getMessage() for r in caplog.records if "a/n/1" in r.getMessage()]
    assert lines[:2] == ["started a/n/1 (unit.cancel.anap)",
                         "stopping a/n/1 (unit.cancel.anap): cancelled by the coordinator "
                         "(workflow cancelled)"]
    assert len(lines) == 3 and lines[2].startswith("ended a/n/1 (unit.cancel.anap): "
                                                   "cancelled after ")
    assert worker.running == {}


async def test_a_cancelled_sync_attempt_is_told_at_its_next_ctx_call() -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.cancel.cooperative", workflow_id="a"))})
    producer = FakeProducer()
    worker = Worker(settings(concurrency=1))
    async with serving(worker, consumer, producer):
        await wait_until(lambda: started(producer) == ["a"])
        worker.cancel(cancel("a", "user asked"))
        await wait_until(lambda: worker.running == {} and worker.intake.running == 0)
    assert STOPPED == ["a/n/1 must stop: cancelled (user asked)"]
    assert outcomes(producer) == {}


async def test_a_sync_attempt_ignoring_the_stop_keeps_its_slot_until_it_returns() -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.cancel.stubborn", workflow_id="a"),
                                          dispatch("unit.ok", workflow_id="b"))})
    producer = FakeProducer()
    worker = Worker(settings(concurrency=1))
    try:
        async with serving(worker, consumer, producer):
            await wait_until(lambda: started(producer) == ["a"])
            worker.cancel(cancel("a"))
            await asyncio.sleep(0.3)
            assert started(producer) == ["a"]  # b waits: a's thread still runs
            RELEASE.set()
            await wait_until(lambda: "b" in outcomes(producer))
    finally:
        RELEASE.set()
    assert "a" not in outcomes(producer)  # it returned, but it was cancelled


async def test_a_dispatch_cancelled_before_it_arrives_is_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.ok", workflow_id="a"),
                                          dispatch("unit.ok", workflow_id="b"))})
    producer = FakeProducer()
    worker = Worker(settings())
    worker.cancel(cancel("a"))  # nothing runs yet: only remembered
    with caplog.at_level(logging.INFO, logger="headwater.worker"):
        async with serving(worker, consumer, producer):
            await wait_until(lambda: consumer.committed.get(TP0) == 2)
    assert started(producer) == ["b"]
    assert "skipping a/n/1 (unit.ok): cancelled by the coordinator" in caplog.text


async def test_a_cancelled_generator_stops_at_its_next_item_and_is_closed() -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.cancel.ticker", workflow_id="a"))})
    producer = FakeProducer()
    worker = Worker(settings(concurrency=1))

    def chunks() -> int:
        return sum(isinstance(r, ev.TaskOutputStreamed) for r in producer.reports())

    async with serving(worker, consumer, producer):
        await wait_until(lambda: chunks() >= 3)
        worker.cancel(cancel("a"))
        await wait_until(lambda: worker.running == {} and worker.intake.running == 0)
        sent = chunks()
        await asyncio.sleep(0.1)
        assert chunks() == sent  # no more chunks once cancelled
    assert len(STOPPED) == 1 and STOPPED[0].startswith("ticker closed after")
    assert outcomes(producer) == {}


async def test_a_redelivered_dispatch_of_an_attempt_running_here_is_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    again = dispatch("unit.cancel.anap", {"seconds": 0.3}, workflow_id="a")
    consumer = FakeConsumer({TP0: records(again, again)})  # a rebalance delivered it twice
    producer = FakeProducer()
    with caplog.at_level(logging.INFO, logger="headwater.worker"):
        async with serving(Worker(settings(concurrency=2)), consumer, producer):
            await wait_until(lambda: "a" in outcomes(producer))
            await wait_until(lambda: consumer.committed.get(TP0) == 2)
    assert started(producer) == ["a"]
    assert "skipping a/n/1 (unit.cancel.anap): it is already running here" in caplog.text


async def test_a_dispatch_of_an_attempt_that_already_ran_here_is_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    """Sent again after its attempt ended (a coordinator carrying out its last batch again
    after a crash): the attempt does not run a second time."""
    again = dispatch("unit.cancel.anap", {"seconds": 0.05}, workflow_id="a")
    consumer = FakeConsumer({TP0: records(again, again)})
    producer = FakeProducer()
    with caplog.at_level(logging.INFO, logger="headwater.worker"):
        async with serving(Worker(settings(concurrency=1)), consumer, producer):
            await wait_until(lambda: consumer.committed.get(TP0) == 2)
    assert started(producer) == ["a"]
    assert "skipping a/n/1 (unit.cancel.anap): it already ran here" in caplog.text
