"""A dispatch delivered again to the worker running its attempt, after a rebalance
(each change of a worker's lanes is one: ``services.worker.lanes``), is skipped; its
offset must still wait for the running attempt's ``TaskStarted`` to be acknowledged.
Committed before, a worker that dies then leaves an attempt the coordinator never hears
started of, whose dispatch no worker gets again: without a timeout it waits for ever."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from worker_fakes import (
    GATE,
    TP0,
    FakeConsumer,
    FakeProducer,
    dispatch,
    records,
    serving,
    settings,
    started,
    wait_until,
)

from headwater import codec
from headwater.core import events as ev
from services.worker.app import Worker


@dataclass
class HeldStarts(FakeProducer):
    """A broker that acknowledges no ``TaskStarted`` until ``release`` is set."""

    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def send_and_wait(self, topic: str, value: bytes | None = None,
                            key: bytes | None = None, partition: int | None = None,
                            timestamp_ms: int | None = None, headers: Any = None) -> None:
        if value is not None and isinstance(codec.decode(value), ev.TaskStarted):
            await self.release.wait()
        await super().send_and_wait(topic, value, key, partition, timestamp_ms, headers)


async def rebalanced(worker: Worker, consumer: FakeConsumer) -> None:
    """The partition is revoked and assigned back to this worker, which reads it again
    from its committed offset (as Kafka hands it over)."""
    await worker.intake.listener.on_partitions_revoked({TP0})
    await worker.intake.listener.on_partitions_assigned({TP0})
    consumer.seek(TP0, consumer.committed.get(TP0, 0))


async def test_a_redelivery_during_the_start_is_committed_only_once_it_is_acknowledged(
        caplog: pytest.LogCaptureFixture) -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.ok", workflow_id="a"))})
    producer = HeldStarts()
    worker = Worker(settings())
    with caplog.at_level(logging.INFO, logger="headwater.worker"):
        async with serving(worker, consumer, producer):
            await wait_until(lambda: "a" in {k[0] for k in worker.running})
            await rebalanced(worker, consumer)
            await wait_until(lambda: "it is already running here" in caplog.text)
            await asyncio.sleep(0.5)  # background commits come every 100 ms at most
            assert consumer.committed.get(TP0, 0) == 0  # its TaskStarted is not acked
            producer.release.set()
            await wait_until(lambda: consumer.committed.get(TP0) == 1)
    assert started(producer) == ["a"]


async def test_a_redelivery_after_the_start_was_acknowledged_is_committed_at_once() -> None:
    """The other case: the running attempt's dispatch needed no redelivery already
    (a commit that failed, say), so the copy's offset is committed without waiting."""
    consumer = FakeConsumer({TP0: records(dispatch("unit.gated", {"n": 1},
                                                   workflow_id="a"))})
    producer = HeldStarts()
    producer.release.set()
    worker = Worker(settings())
    GATE.clear()
    try:
        async with serving(worker, consumer, producer):
            await wait_until(lambda: started(producer) == ["a"])
            await wait_until(lambda: consumer.committed.get(TP0) == 1)
            consumer.committed.clear()  # as if that commit had not landed
            await rebalanced(worker, consumer)
            await wait_until(lambda: consumer.committed.get(TP0) == 1)
            assert worker.running  # still running: the copy did not wait for its end
    finally:
        GATE.set()
