"""The events topic read by offset ranges, for rebuilding the projection: no consumer
group, nothing committed, so the live projector is not disturbed."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from services.common.settings import CommonSettings

log = logging.getLogger(__name__)
Offsets = dict[int, int]
"""Partition -> offset."""


class EventLog:
    """Reads ranges of the events topic; use ``async with``."""

    def __init__(self, settings: CommonSettings, timeout_s: float = 600.0) -> None:
        self.settings = settings
        self.topic = settings.topics.events
        self.timeout_s = timeout_s
        self.undecodable = 0
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.bootstrap, group_id=None, enable_auto_commit=False,
            auto_offset_reset="earliest", max_partition_fetch_bytes=settings.max_message_bytes,
            fetch_max_bytes=settings.max_message_bytes * 4)
        self.admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap,
                                         request_timeout_ms=30_000)
        self._tps: list[TopicPartition] = []

    async def __aenter__(self) -> EventLog:
        try:
            await self.consumer.start()
            await self.admin.start()
            (found,) = await asyncio.wait_for(self.admin.describe_topics([self.topic]), 30)
        except BaseException:
            await self.consumer.stop()
            raise
        if found["error_code"] == 0:
            self._tps = [TopicPartition(self.topic, int(p["partition"]))
                         for p in sorted(found["partitions"], key=lambda p: p["partition"])]
            self.consumer.assign(self._tps)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            await self.admin.close()
        finally:
            await self.consumer.stop()

    @property
    def exists(self) -> bool:
        """Whether the topic exists."""
        return bool(self._tps)

    async def beginning(self) -> Offsets:
        """The first offset each partition still holds (above 0: retention deleted some)."""
        got = await self.consumer.beginning_offsets(self._tps)
        return {tp.partition: got[tp] for tp in self._tps}

    async def end(self) -> Offsets:
        """The offset the next record of each partition will get."""
        got = await self.consumer.end_offsets(self._tps)
        return {tp.partition: got[tp] for tp in self._tps}

    async def committed(self, group: str) -> Offsets:
        """The committed offsets of consumer group ``group`` (partitions without one are
        left out)."""
        got = await asyncio.wait_for(
            self.admin.list_consumer_group_offsets(group, partitions=self._tps), 30)
        return {tp.partition: meta.offset for tp, meta in got.items() if meta.offset >= 0}

    async def read(self, start: Offsets, stop: Offsets,
                   batch: int = 2000) -> AsyncIterator[list[ev.HistoryEvent]]:
        """The events at offsets ``start[p] <= offset < stop[p]``, a batch at a time, in
        offset order per partition. Undecodable records are skipped and counted, as the
        projector does.

        Raises:
            TimeoutError: the range was not read within the timeout.
        """
        left = {tp for tp in self._tps if start.get(tp.partition, 0) < stop.get(tp.partition, 0)}
        for tp in left:
            self.consumer.seek(tp, start.get(tp.partition, 0))
        deadline = time.monotonic() + self.timeout_s
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {self.topic} took longer than {self.timeout_s:g} s")
            got = await self.consumer.getmany(*left, timeout_ms=500, max_records=batch)
            events: list[ev.HistoryEvent] = []
            for tp, records in got.items():
                events += self._decode(r for r in records if r.offset < stop[tp.partition])
            if events:
                yield events
            left = {tp for tp in left if await self.consumer.position(tp) < stop[tp.partition]}

    def _decode(self, records: Iterable[Any]) -> list[ev.HistoryEvent]:
        out: list[ev.HistoryEvent] = []
        for r in records:
            try:
                event = codec.decode(r.value)
            except DecodeError as e:
                log.error("undecodable record on %s@%d: %s", r.topic, r.offset, e)
                self.undecodable += 1
                continue
            if isinstance(event, ev.HistoryEvent):
                out.append(event)
        return out
