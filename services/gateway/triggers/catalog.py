"""The triggers every gateway knows and runs: the ``triggers`` topic read into memory,
and one consumer (``runner.TriggerRunner``) per live trigger.

``<p>.triggers`` is compacted with one partition, keyed ``<tenant>/<name>``
(``headwater.trigger_records``): the last record of a key is the trigger. Every gateway
reads the whole topic at start-up (before it answers ready), then follows it, so a
``PUT`` on one gateway starts the trigger's consumer on all of them, each a member of
the trigger's consumer group (Kafka spreads the topic's partitions over them). A record
is applied when its offset is past the key's last one, so the gateway that wrote it may
apply it at once (``take``, after Kafka's acknowledgement) and again as it reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math

from aiokafka import AIOKafkaProducer

from headwater import codec
from headwater.errors import DecodeError
from headwater.trigger_records import TriggerStored, trigger_key
from services.common.kafka.client import ensure_compacted_topics
from services.common.topic_reader import TopicReader
from services.gateway.triggers import settings as checks
from services.gateway.triggers.runner import Plumbing, TriggerRunner

log = logging.getLogger("headwater.gateway.triggers")

RECONNECT_S = 2.0
"""How long the reader waits before reading the topic again after a Kafka error."""


class Catalog:
    """The triggers, by key, and their consumers.

    Args:
        plumbing: what the consumers share with the gateway.
        run: whether to run consumers (False: only know the triggers).
    """

    def __init__(self, plumbing: Plumbing, run: bool = True) -> None:
        self.plumbing = plumbing
        self.run = run
        self.stored: dict[str, tuple[int, TriggerStored]] = {}
        self.runners: dict[str, TriggerRunner] = {}
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self.caught_up = asyncio.Event()

    async def start(self) -> None:
        """Read the topic to its end, start the live triggers, then follow it."""
        await ensure_compacted_topics(self.plumbing.settings, [self.plumbing.topics.triggers],
                                      timeout_s=math.inf)
        self._reader = asyncio.create_task(self._read(), name="triggers topic")
        await self.caught_up.wait()

    async def stop(self) -> None:
        """Stop following the topic and every consumer."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        async with self._lock:
            for runner in self.runners.values():
                await runner.stop()
            self.runners.clear()

    def live(self, key: str) -> TriggerStored | None:
        """The live trigger of ``key`` (``trigger_key``), or None."""
        found = self.stored.get(key)
        return None if found is None or found[1].deleted else found[1]

    def all_live(self) -> list[TriggerStored]:
        """Every live trigger, by key."""
        return [r for _, (_, r) in sorted(self.stored.items()) if not r.deleted]

    async def write(self, record: TriggerStored) -> None:
        """Produce ``record`` to the topic, wait for Kafka's acknowledgement, and apply it.

        Raises:
            Exception: Kafka's (not stored, or not known to be).
        """
        producer: AIOKafkaProducer = self.plumbing.producer
        meta = await asyncio.wait_for(producer.send_and_wait(
            self.plumbing.topics.triggers, codec.encode(record),
            key=trigger_key(record.tenant, record.name).encode()), self.plumbing.timeout_s)
        await self.take(meta.offset, record)

    async def take(self, offset: int, record: TriggerStored) -> None:
        """Apply one record of the topic at ``offset``: start, restart (new settings) or
        stop its trigger's consumer. A record at or before the key's last is ignored."""
        key = trigger_key(record.tenant, record.name)
        async with self._lock:
            known = self.stored.get(key)
            if known is not None and known[0] >= offset:
                return
            self.stored[key] = (offset, record)
            if not self.run:
                return
            running = self.runners.get(key)
            if running is not None:
                if not record.deleted and running.settings.document == record.settings:
                    return
                await running.stop()
                del self.runners[key]
            if record.deleted:
                return
            try:
                parsed = checks.parse(record.name, record.tenant, record.settings)
            except ValueError as e:  # written by a gateway of other rules: not run
                log.warning("trigger %s at offset %d is not run: %s", key, offset, e)
                return
            runner = TriggerRunner(parsed, key, self.plumbing)
            runner.start()
            self.runners[key] = runner

    async def _read(self) -> None:
        while True:
            try:
                async with TopicReader(
                        self.plumbing.settings.bootstrap,
                        max_message_bytes=self.plumbing.settings.max_message_bytes,
                        security=self.plumbing.settings.kafka_security) as reader:
                    await self._catch_up_and_follow(reader)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("reading the triggers topic failed (%r); reading it again", e)
            await asyncio.sleep(RECONNECT_S)

    async def _catch_up_and_follow(self, reader: TopicReader) -> None:
        topic = self.plumbing.topics.triggers
        partitions = await reader.partitions(topic, wait_s=30.0)
        end = await reader.end_offsets(topic, partitions)
        async for batch in reader.batches(topic, {}, end, timeout_s=math.inf):
            for r in batch:
                await self._decoded(r.offset, r.value)
        self.caught_up.set()
        async for batch in reader.follow(topic, end, timeout_s=math.inf):
            for r in batch:
                await self._decoded(r.offset, r.value)

    async def _decoded(self, offset: int, value: bytes | None) -> None:
        try:
            record = codec.decode(value or b"")
        except DecodeError as e:
            log.warning("ignoring record %d of the triggers topic: %s", offset, e)
            return
        if isinstance(record, TriggerStored):
            await self.take(offset, record)
        else:
            log.warning("ignoring record %d of the triggers topic: a %s",
                        offset, type(record).__name__)
