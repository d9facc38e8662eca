"""Kafka plumbing for the benchmarks: a background topic reader, end offsets, the bytes
in an offset range, fresh topics and producers. Reading goes through
``services.common.topic_reader``; ``consumer`` is the raw client B1 measures."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.protocol.group import MemberAssignment

from headwater import codec
from services.common.settings import DEFAULT_MAX_MESSAGE_BYTES
from services.common.topic_reader import Offsets, TopicReader

__all__ = ["FETCH_BYTES", "Offsets", "Seen", "Tail", "begin_offsets", "consumer", "delete_topic",
           "end_offsets", "existing_partitions", "fresh_topic", "partitions_held",
           "partitions_per_member", "producer", "range_bytes", "reader"]

FETCH_BYTES = 32 * 1024 * 1024  # above the 16 MiB records Headwater may write
TAIL_POLL_S = 0.1
"""The longest one fetch of a ``Tail`` waits, seconds."""


@dataclass(frozen=True)
class Seen:
    """One record read by a ``Tail``.

    Attributes:
        timestamp_ms: the record's Kafka timestamp (producer CreateTime), ms since the epoch.
        size: key plus value, bytes.
        value: the decoded record (``codec.decode``).
    """

    timestamp_ms: int
    size: int
    value: Any


def consumer(bootstrap: str) -> AIOKafkaConsumer:
    """A group-less consumer with room for Headwater's largest records (B1's raw client;
    everything else reads through ``reader``)."""
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                            auto_offset_reset="earliest", max_partition_fetch_bytes=FETCH_BYTES,
                            fetch_max_bytes=FETCH_BYTES)


def reader(bootstrap: str, timeout_s: float = 60.0) -> TopicReader:
    """A ``TopicReader`` with room for Headwater's largest records; ``timeout_s`` bounds
    each read, seconds."""
    return TopicReader(bootstrap, max_message_bytes=FETCH_BYTES, fetch_max_bytes=FETCH_BYTES,
                       timeout_s=timeout_s)


def producer(bootstrap: str, **kwargs: Any) -> AIOKafkaProducer:
    """An ``acks=all`` producer (the default of every Headwater producer)."""
    return AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                            max_request_size=DEFAULT_MAX_MESSAGE_BYTES, **kwargs)


async def existing_partitions(source: TopicReader, topic: str, timeout_s: float) -> list[int]:
    """The partitions of ``topic``, waiting up to ``timeout_s`` for it to exist.

    Raises:
        TimeoutError: the topic did not appear.
    """
    found = await source.partitions(topic, wait_s=timeout_s)
    if not found:
        raise TimeoutError(f"topic {topic} did not appear within {timeout_s} s")
    return found


class Tail:
    """Reads every partition of one topic in the background, from its end at ``start``.

    ``on_record`` sees each record as it arrives (keep counters there rather than scanning
    ``records``); ``wait_until`` waits for a condition those counters answer. With
    ``keep=False`` ``records`` stays empty (a reader of hundreds of thousands of records
    that only counts need not hold them all).
    """

    def __init__(self, bootstrap: str, topic: str,
                 on_record: Callable[[Seen], None] | None = None, keep: bool = True) -> None:
        self.topic = topic
        self.on_record = on_record
        self.keep = keep
        self.records: list[Seen] = []
        self.read = 0
        self._reader = reader(bootstrap)
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout_s: float = 60.0) -> None:
        """Read the end offsets of every partition now, then read from there in the
        background (so every record produced after this returns is seen).

        Raises:
            TimeoutError: the topic does not exist after ``timeout_s``.
        """
        await self._reader.start()
        try:
            parts = await existing_partitions(self._reader, self.topic, timeout_s)
            ends = await self._reader.end_offsets(self.topic, parts)
        except BaseException:
            await self._reader.stop()
            raise
        self._task = asyncio.create_task(self._read(ends))

    async def _read(self, start: Offsets) -> None:
        async for batch in self._reader.follow(self.topic, start, max_records=5000,
                                               timeout_s=math.inf, poll_s=TAIL_POLL_S):
            for r in batch:  # until ``stop`` cancels it
                size = (r.serialized_key_size or 0) + max(r.serialized_value_size, 0)
                seen = Seen(r.timestamp, size, codec.decode(r.value))
                self.read += 1
                if self.keep:
                    self.records.append(seen)
                if self.on_record is not None:
                    self.on_record(seen)

    async def wait_until(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Wait until ``condition()`` holds, checking every 20 ms.

        Raises:
            TimeoutError: it did not hold within ``timeout_s`` (``what`` says what was awaited).
            RuntimeError: the reader failed (its error is chained).
        """
        deadline = time.monotonic() + timeout_s
        while not condition():
            if self._task is not None and self._task.done():
                raise RuntimeError(f"reader of {self.topic} stopped") from self._task.exception()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout_s:.0f} s "
                                   f"({self.read} records of {self.topic} read)")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        """Stop reading and close the reader."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await self._reader.stop()


async def end_offsets(bootstrap: str, topic: str, timeout_s: float = 60.0) -> Offsets:
    """Partition -> end offset (the next offset to be written) of ``topic``.

    Raises:
        TimeoutError: the topic does not exist after ``timeout_s``.
    """
    async with reader(bootstrap) as source:
        parts = await existing_partitions(source, topic, timeout_s)
        return await source.end_offsets(topic, parts)


async def begin_offsets(bootstrap: str, topic: str, timeout_s: float = 60.0) -> Offsets:
    """Partition -> first offset still held of ``topic`` (above 0 once retention deleted
    the oldest records; compaction removes records within the range and leaves it).

    Raises:
        TimeoutError: the topic does not exist after ``timeout_s``.
    """
    async with reader(bootstrap) as source:
        parts = await existing_partitions(source, topic, timeout_s)
        return await source.beginning_offsets(topic, parts)


async def range_bytes(bootstrap: str, topic: str, start: Offsets, end: Offsets,
                      timeout_s: float) -> tuple[int, int]:
    """Sum the key and value bytes of the records of ``topic`` in ``[start, end)``.

    Args:
        bootstrap: the broker.
        topic: the topic.
        start: partition -> first offset (partitions missing here start at 0).
        end: partition -> end offset, exclusive.
        timeout_s: give up after this long, seconds.

    Returns:
        ``(bytes, records)`` read. Fewer records than the offsets span means compaction
        removed some before they were read.

    Raises:
        TimeoutError: the range was not read within ``timeout_s``.
    """
    total = count = 0
    async with reader(bootstrap, timeout_s) as source:
        async for batch in source.batches(topic, start, end):
            total += sum((r.serialized_key_size or 0) + max(r.serialized_value_size, 0)
                         for r in batch)
            count += len(batch)
    return total, count


async def fresh_topic(bootstrap: str, name: str, partitions_: int = 1) -> None:
    """Create topic ``name`` (replication 1)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions_, 1)])
    finally:
        await admin.close()


async def delete_topic(bootstrap: str, name: str) -> None:
    """Delete topic ``name``; a topic already gone is fine."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        with contextlib.suppress(Exception):
            await admin.delete_topics([name])
    finally:
        await admin.close()


async def partitions_per_member(bootstrap: str, group: str, topic: str) -> list[int]:
    """How many partitions of ``topic`` each member of consumer group ``group`` holds now,
    most first (``partitions_held`` of the group's description).

    Raises:
        ValueError: a member's assignment is not in the consumer protocol's format.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [response] = await admin.describe_consumer_groups([group])
        members = [m for g in response.groups if g[1] == group for m in g[5]]
    finally:
        await admin.close()
    return partitions_held([m[4] for m in members], topic)


def partitions_held(assignments: list[bytes], topic: str) -> list[int]:
    """The partitions of ``topic`` in each member assignment (the consumer protocol's
    ``MemberAssignment``, which faust's assignor writes too), most first.

    Raises:
        ValueError: an assignment does not decode.
    """
    held = []
    for raw in assignments:
        try:
            decoded = MemberAssignment.decode(raw)
        except Exception as e:  # the protocol's decoder raises struct and index errors
            raise ValueError(f"not a consumer group member assignment: {raw[:40]!r}") from e
        held.append(sum(len(parts) for name, parts in decoded.assignment if name == topic))
    return sorted(held, reverse=True)
