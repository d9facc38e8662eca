"""Following the coordinator's cancels (``ControlListener``, ``RecentAttempts``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition
from worker_fakes import Record, dispatch, wait_until

from headwater import codec
from headwater.core import events as ev
from services.worker.control import ControlListener, RecentAttempts

TOPIC = "t.worker-control"


@dataclass
class FakeControlConsumer:
    """A group-less consumer: the topic's partitions show up after a few polls of the
    metadata; records are fed through :attr:`incoming`."""

    partitions: int = 3
    metadata_after: int = 2
    incoming: asyncio.Queue[tuple[int, Record]] = field(default_factory=asyncio.Queue)
    subscribed: list[str] = field(default_factory=list)
    sought_to_end: list[TopicPartition] = field(default_factory=list)
    positions: list[TopicPartition] = field(default_factory=list)
    checks: int = 0
    fail_next_poll: bool = False

    def subscribe(self, topics: list[str]) -> None:
        self.subscribed = list(topics)

    def assignment(self) -> set[TopicPartition]:
        self.checks += 1
        if not self.subscribed or self.checks <= self.metadata_after:
            return set()
        return {TopicPartition(TOPIC, p) for p in range(self.partitions)}

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        self.sought_to_end = list(partitions)

    async def position(self, partition: TopicPartition) -> int:
        self.positions.append(partition)
        return 0

    async def getmany(self, timeout_ms: int = 0,
                      max_records: int | None = None) -> dict[TopicPartition, list[Any]]:
        if self.fail_next_poll:
            self.fail_next_poll = False
            raise RuntimeError("broker away")
        try:
            p, record = await asyncio.wait_for(self.incoming.get(), timeout_ms / 1000)
        except TimeoutError:
            return {}
        return {TopicPartition(TOPIC, p): [record]}


def cancelled(workflow_id: str) -> ev.TaskCancelled:
    return ev.TaskCancelled(workflow_id, "n", None, 1, 5, "workflow cancelled")


async def test_start_assigns_every_partition_and_fixes_the_ends() -> None:
    consumer = FakeControlConsumer()
    listener = ControlListener(consumer, TOPIC, lambda c: None)
    await listener.start()
    every = [TopicPartition(TOPIC, p) for p in range(3)]
    assert consumer.subscribed == [TOPIC]
    assert consumer.sought_to_end == every and consumer.positions == every


async def test_start_gives_up_when_the_topic_never_shows() -> None:
    consumer = FakeControlConsumer(metadata_after=10**9)
    with pytest.raises(TimeoutError, match=r"no partitions of t\.worker-control"):
        await ControlListener(consumer, TOPIC, lambda c: None).start(timeout_s=0.1)


async def test_cancels_are_passed_on_and_other_records_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    consumer = FakeControlConsumer()
    seen: list[ev.TaskCancelled] = []
    listener = ControlListener(consumer, TOPIC, seen.append)
    await listener.start()
    consumer.fail_next_poll = True  # a poll that fails is retried
    for p, value in [(0, codec.encode(cancelled("a"))), (1, b"garbage"),
                     (2, codec.encode(dispatch("unit.ok"))), (1, codec.encode(cancelled("b")))]:
        consumer.incoming.put_nowait((p, Record(0, value)))
    reader = asyncio.create_task(listener.run())
    try:
        with caplog.at_level(logging.WARNING, logger="headwater.worker"):
            await wait_until(lambda: len(seen) == 2)
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    assert [c.workflow_id for c in seen] == ["a", "b"]
    assert "skipping an undecodable record of t.worker-control" in caplog.text
    assert "reading t.worker-control failed" in caplog.text


def test_cancelled_attempts_are_remembered_up_to_a_bound() -> None:
    remembered = RecentAttempts(capacity=3)
    for i in range(5):
        remembered.add((f"w{i}", "n", None, 1))
    remembered.add(("w2", "n", None, 1))  # seen again: the newest now
    remembered.add(("w5", "n", None, 1))
    assert len(remembered) == 3
    assert [i for i in range(6) if (f"w{i}", "n", None, 1) in remembered] == [2, 4, 5]
