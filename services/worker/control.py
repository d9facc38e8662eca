"""What the coordinator tells every worker: ``TaskCancelled`` on ``worker-control``.

Each worker process reads every partition of the topic, without a consumer group, from
its end as of when the worker started: a cancel concerns only attempts that run now or
are still queued. Cancelled attempts are remembered (a bounded set) so that a dispatch
taken after its cancel arrived is skipped without running.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from aiokafka import TopicPartition

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from services.worker.attempt import AttemptKey

log = logging.getLogger("headwater.worker")

REMEMBERED = 100_000
"""Cancelled attempts a worker remembers (the oldest are forgotten first)."""
POLL_MS = 500
"""How long one poll of the control topic waits for records, milliseconds."""


class ControlConsumer(Protocol):
    """The part of ``AIOKafkaConsumer`` (started with ``group_id=None``) used here."""

    def subscribe(self, topics: list[str]) -> None:
        """Read ``topics``; without a group, every partition is assigned."""

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned (empty until the topic's metadata is known)."""

    async def seek_to_end(self, *partitions: TopicPartition) -> Any:
        """Move to the end of ``partitions``."""

    async def position(self, partition: TopicPartition) -> int:
        """The next offset read from ``partition``."""

    async def getmany(self, timeout_ms: int = 0,
                      max_records: int | None = None) -> dict[TopicPartition, list[Any]]:
        """Records fetched per partition."""


class RecentAttempts:
    """Attempts seen lately (cancelled, or finished here): a set that forgets its oldest
    entries.

    Args:
        capacity: entries kept.
    """

    def __init__(self, capacity: int = REMEMBERED) -> None:
        self.capacity = capacity
        self._keys: collections.OrderedDict[AttemptKey, None] = collections.OrderedDict()

    def add(self, key: AttemptKey) -> None:
        """Remember ``key`` (as the newest entry)."""
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self.capacity:
            self._keys.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)


class ControlListener:
    """Calls ``on_cancel`` with each ``TaskCancelled`` produced after :meth:`start`.

    Args:
        consumer: a started consumer without a group.
        topic: the worker-control topic.
        on_cancel: called on the loop for each cancel.
    """

    def __init__(self, consumer: ControlConsumer, topic: str,
                 on_cancel: Callable[[ev.TaskCancelled], None]) -> None:
        self.consumer = consumer
        self.topic = topic
        self.on_cancel = on_cancel

    async def start(self, timeout_s: float = 60.0) -> None:
        """Assign every partition of the topic and fix the positions at their ends.

        Raises:
            TimeoutError: the topic's partitions were not known within ``timeout_s``.
        """
        self.consumer.subscribe([self.topic])
        deadline = time.monotonic() + timeout_s
        while not self.consumer.assignment():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no partitions of {self.topic} after {timeout_s} s")
            await asyncio.sleep(0.05)
        assigned = sorted(self.consumer.assignment())
        await self.consumer.seek_to_end(*assigned)
        for tp in assigned:  # resolve the ends now: cancels from here on are seen
            await self.consumer.position(tp)

    async def run(self) -> None:
        """Read and apply cancels until cancelled; never raises otherwise."""
        while True:
            try:
                batches = await self.consumer.getmany(timeout_ms=POLL_MS)
            except Exception:
                log.exception("reading %s failed; trying again", self.topic)
                await asyncio.sleep(1.0)
                continue
            for records in batches.values():
                for record in records:
                    self._apply(record.value)

    def _apply(self, value: bytes | None) -> None:
        try:
            record = codec.decode(value)
        except DecodeError as e:
            log.warning("skipping an undecodable record of %s: %s", self.topic, e)
            return
        if isinstance(record, ev.TaskCancelled):
            try:
                self.on_cancel(record)
            except Exception:
                log.exception("applying %s failed", record)
