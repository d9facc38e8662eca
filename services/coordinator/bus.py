"""Where the coordinator's output goes (``Bus``), and ``FaustBus`` over faust topics:
history to ``events``, dispatches to ``tasks.<queue>``, cancelled attempts to
``worker-control``, undecodable records to the DLQ (less any ``authorization`` header:
never a token)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol

from headwater import codec
from headwater.core import events as ev
from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER, VALUE_OMITTED_HEADER
from services.common.kafka.client import AVRO_HEADERS, ensure_topics
from services.common.metrics import DEAD_LETTERS
from services.common.settings import CommonSettings
from services.coordinator.faust_seam.app import record_bytes
from services.coordinator.records import DeadLetter, Outgoing
from services.coordinator.submitters import without_authorization

MAX_REASON_CHARS = 4000
"""Longest reason kept in a dead letter's header."""

TopicMaker = Callable[[CommonSettings, Iterable[str]], Awaitable[None]]
"""Creates the topics that do not exist yet and returns once the broker lists them
(``services.common.kafka.ensure_topics``)."""


class Bus(Protocol):
    """Where the coordinator's output goes (Kafka)."""

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        """Send encoded records and dead letters; return once the broker acknowledged
        all of them."""

    async def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int,
                   headers: list[tuple[str, bytes]]) -> Awaitable[Any]:
        """Queue one record for ``partition`` (a record moved home: ``homing``); the
        awaitable resolves once the broker acknowledged it."""

    def too_large(self, key: bytes | None, value: bytes | None,
                  headers: list[tuple[str, bytes]]) -> str | None:
        """Why a record is over the largest the producer sends (its size and the limit);
        None when it fits."""


class FaustBus:
    """Publishes through the faust app's producer and waits for the broker's acks."""

    def __init__(self, app: Any, settings: CommonSettings,
                 auth: Sequence[tuple[str, bytes]] = (),
                 make_topics: TopicMaker = ensure_topics) -> None:
        """A bus over the faust app's producer and topics.

        Args:
            app: the faust app (its ``topic`` and its aiokafka ``producer``).
            settings: topic names, the record size limit, the broker.
            auth: the ``authorization`` header the coordinator's own records on
                ``submissions`` and ``control`` carry (``auth.settings.ServiceAuth.headers``),
                none when auth is off.
            make_topics: creates a topic on its first use (a queue's ``tasks.<queue>``).
        """
        self.app = app
        self.settings = settings
        self._make_topics = make_topics
        self.topics = topics = settings.topics
        self._dlq = self._topic(topics.dlq)
        # Topics the coordinator created or found at start; others are created on first use.
        self._ready: dict[str, Any] = {
            name: self._topic(name) for name in (topics.events, topics.worker_control)}
        # The coordinator's token on what it sends to submissions and control (children,
        # their cancels, timers), which the coordinators check when auth is on.
        self._guarded = [*AVRO_HEADERS, *auth]
        self._checked = (topics.submissions, topics.control)

    def _topic(self, name: str) -> Any:
        return self.app.topic(name, key_serializer="raw", value_serializer="raw")

    async def topic(self, name: str) -> Any:
        """The faust topic ``name`` (a queue's ``tasks.<queue>``: created on first use)."""
        topic = self._ready.get(name)
        if topic is None:
            await self._make_topics(self.settings, [name])
            topic = self._ready[name] = self._topic(name)
        return topic

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        """Send every encoded record and dead letter; wait until all are acknowledged.

        Records go straight to the app's aiokafka producer (``Producer.send``, Kafka's
        default partitioner of the key), past faust's per-topic send path (a future
        message, callbacks and a buffer per record: a tenth of the coordinator's time at
        load); the table's changelog still goes through faust, which keeps its stores'
        offsets.
        """
        futures = [await self._dead_letter(d) for d in dead]
        for r in records:
            if r.topic not in self._ready:
                await self.topic(r.topic)
            base = self._guarded if r.topic in self._checked else AVRO_HEADERS
            headers = [*base, *r.headers] if r.headers else base  # trace
            futures.append(await self.app.producer.send(r.topic, r.key, r.value, None, None,
                                                        headers))
        await asyncio.gather(*futures)

    async def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int,
                   headers: list[tuple[str, bytes]]) -> Awaitable[Any]:
        """Queue one record for ``partition`` with ``headers``, as they are (``homing``)."""
        ack: Awaitable[Any] = await self.app.producer.send(topic, key, value, partition, None,
                                                           headers)
        return ack

    def too_large(self, key: bytes | None, value: bytes | None,
                  headers: list[tuple[str, bytes]]) -> str | None:
        """Why the producer would refuse a record (``MessageSizeTooLargeError``):
        ``"<size> bytes, over HEADWATER_MAX_MESSAGE_BYTES (<limit>)"``; None when it
        fits. The size is aiokafka's estimate (``faust_seam.record_bytes``)."""
        size, limit = record_bytes(key, value, headers), self.settings.max_message_bytes
        return f"{size} bytes, over HEADWATER_MAX_MESSAGE_BYTES ({limit})" if size > limit else None

    async def send_control(self, record: ev.TimerFired | ev.CancelRequested) -> None:
        """Send a record to the control topic (keyed by workflow id) and wait for the ack."""
        topic = self._topic(self.topics.control)
        fut = await topic.send(key=record.workflow_id.encode(), value=codec.encode(record),
                               headers=self._guarded)
        await fut

    async def _dead_letter(self, dead: DeadLetter) -> Any:
        """Send the original bytes to the DLQ, with reason and origin headers. A record
        that would not fit ``max_message_bytes`` with them (an input near the limit) goes
        without its value, and says so; its origin headers name where to read it."""
        r = dead.record
        hdrs = [*without_authorization(r.headers),
                (REASON_HEADER, dead.reason[:MAX_REASON_CHARS].encode()),
                (SOURCE_TOPIC_HEADER, r.topic.encode()),
                ("source-partition", str(r.partition).encode()),
                ("source-offset", str(r.offset).encode())]
        value = r.value
        if self.too_large(r.key, value, hdrs) is not None:
            hdrs.append((VALUE_OMITTED_HEADER, f"{len(value or b'')} bytes".encode()))
            value = None
        DEAD_LETTERS.labels(r.topic).inc()
        return await self._dlq.send(key=r.key, value=value, headers=hdrs)
