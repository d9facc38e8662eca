"""The events topic read by offset ranges, for rebuilding the projection: no consumer
group, nothing committed, so the live projector is not disturbed. The reading itself is
``services.common.topic_reader``'s; this adds the decoding."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import Any

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from services.common.settings import CommonSettings
from services.common.topic_reader import Offsets, TopicReader

__all__ = ["EventLog", "Offsets"]

log = logging.getLogger(__name__)


class EventLog:
    """Reads ranges of the events topic; use ``async with``.

    Attributes:
        topic: the events topic.
        undecodable: records skipped so far because they did not decode.
    """

    def __init__(self, settings: CommonSettings, timeout_s: float = 600.0) -> None:
        self.settings = settings
        self.topic = settings.topics.events
        self.undecodable = 0
        self.reader = TopicReader(settings.bootstrap,
                                  max_message_bytes=settings.max_message_bytes,
                                  fetch_max_bytes=settings.max_message_bytes * 4,
                                  timeout_s=timeout_s)
        self._partitions: list[int] = []

    async def __aenter__(self) -> EventLog:
        await self.reader.start()
        try:
            self._partitions = await self.reader.partitions(self.topic)
        except BaseException:
            await self.reader.stop()
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.reader.stop()

    @property
    def exists(self) -> bool:
        """Whether the topic exists."""
        return bool(self._partitions)

    async def beginning(self) -> Offsets:
        """The first offset each partition still holds (above 0: retention deleted some)."""
        return await self.reader.beginning_offsets(self.topic, self._partitions)

    async def end(self) -> Offsets:
        """The offset the next record of each partition will get."""
        return await self.reader.end_offsets(self.topic, self._partitions)

    async def committed(self, group: str) -> Offsets:
        """The committed offsets of consumer group ``group`` (partitions without one are
        left out)."""
        return await self.reader.committed(group, self.topic, self._partitions)

    async def read(self, start: Offsets, stop: Offsets,
                   batch: int = 2000) -> AsyncIterator[list[ev.HistoryEvent]]:
        """The events at offsets ``start[p] <= offset < stop[p]``, a batch at a time, in
        offset order per partition. Undecodable records are skipped and counted, as the
        projector does.

        Raises:
            TimeoutError: the range was not read within the timeout.
        """
        wanted = {p: stop.get(p, 0) for p in self._partitions}
        async for records in self.reader.batches(self.topic, start, wanted, max_records=batch):
            events = self._decode(records)
            if events:
                yield events

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
