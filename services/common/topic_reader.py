"""Reading a topic without a consumer group: whole partitions to their end, offset
ranges, or following new records.

Everything that reads Kafka outside the services' consumer groups reads it here: the
audit commands (``ops/cli/kafkalog.py``), the projection rebuild
(``services/projector/eventlog.py``), the benchmarks (``load/kafka_io.py``) and the
end-to-end tests (``tests/e2e/stackkit.py``). The reader has no group, so it commits
nothing and never joins a rebalance: the services are not disturbed, and the log is the
truth it reads (see docs/architecture.md).

"To the end" means to the end offsets read when the read begins: records produced
afterwards are not waited for, so a read of a busy topic still finishes. Offsets are
per partition, as ``Offsets`` (partition -> offset); an end offset is exclusive (the
offset the next record will get). A read that does not finish in time raises
``TimeoutError``; every timeout here is in seconds.

    async with TopicReader(bootstrap) as reader:
        records = await reader.read_to_end("headwater.events")
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable
from types import TracebackType

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError

from services.common.kafka.security import KafkaSecurity, aiokafka_security, raise_if_refused
from services.common.settings import DEFAULT_MAX_MESSAGE_BYTES, kafka_security_from_env

__all__ = ["READ_TIMEOUT_S", "Offsets", "TopicReader"]

Offsets = dict[int, int]
"""Partition -> offset."""

READ_TIMEOUT_S = 300.0
"""How long one read may take by default, seconds."""
REQUEST_TIMEOUT_S = 30.0
"""How long one metadata or offset request may take, seconds."""
POLL_S = 0.5
"""The longest one fetch waits for records, seconds (it returns as soon as some come);
also how often a read checks its deadline while the partitions are quiet."""
TOPIC_POLL_S = 0.2
"""How often ``partitions`` asks again for a topic that does not exist yet, seconds."""


class TopicReader:
    """A consumer without a group that reads ranges of topics; use ``async with`` (or
    ``start`` and ``stop``).

    Args:
        bootstrap: Kafka bootstrap servers, ``host:port[,host:port]``.
        max_message_bytes: the largest record to expect, bytes (one partition's fetch).
        fetch_max_bytes: the most one fetch returns, bytes (default: twice
            ``max_message_bytes``).
        timeout_s: how long one read may take unless it says otherwise, seconds.
        security: TLS and SASL of both clients (a service's ``settings.kafka_security``);
            None: the ``HEADWATER_KAFKA_*`` security settings of the environment.
        retry_backoff_ms: the consumer's wait before it asks again for metadata it
            lacks (aiokafka's ``retry_backoff_ms``): the first offsets of a topic take
            that long, since the consumer learns of its partitions' leaders then.

    Raises:
        ValueError: ``security`` is None and the environment's security settings are
            bad (the message names the variable).
    """

    def __init__(self, bootstrap: str, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 fetch_max_bytes: int | None = None, timeout_s: float = READ_TIMEOUT_S,
                 security: KafkaSecurity | None = None, retry_backoff_ms: int = 100) -> None:
        self.timeout_s = timeout_s
        self.bootstrap = bootstrap
        self.security = kafka_security_from_env() if security is None else security
        secured = aiokafka_security(self.security)
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, **secured, group_id=None, enable_auto_commit=False,
            # An offset below the log's start (retention deleted it) reads from its start.
            auto_offset_reset="earliest", max_partition_fetch_bytes=max_message_bytes,
            fetch_max_bytes=fetch_max_bytes or 2 * max_message_bytes,
            request_timeout_ms=round(REQUEST_TIMEOUT_S * 1000), retry_backoff_ms=retry_backoff_ms)
        self.admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **secured,
                                         request_timeout_ms=round(REQUEST_TIMEOUT_S * 1000))

    async def start(self) -> None:
        """Connect (both clients, or neither).

        Raises:
            KafkaError: the broker is unreachable.
            KafkaAccessRefused: the broker refused the TLS handshake or the SASL
                credentials.
        """
        try:
            await self.consumer.start()
            await self.admin.start()
        except BaseException as e:
            await self.consumer.stop()
            if isinstance(e, KafkaConnectionError):
                await raise_if_refused(self.bootstrap, self.security)
            raise

    async def stop(self) -> None:
        """Close both clients."""
        try:
            await self.admin.close()
        finally:
            await self.consumer.stop()

    async def __aenter__(self) -> TopicReader:
        await self.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    async def partitions(self, topic: str, wait_s: float = 0.0) -> list[int]:
        """The partitions of ``topic``, in order.

        Asks for the metadata of every topic (asking for the one topic would make a
        broker with ``auto.create.topics.enable`` create it).

        Args:
            topic: the topic.
            wait_s: how long to wait for the topic to exist, seconds (0: ask once).

        Returns:
            The partition numbers; empty when the topic does not exist (after ``wait_s``).
        """
        deadline = time.monotonic() + wait_s
        while True:
            found = await asyncio.wait_for(self.admin.describe_topics(), REQUEST_TIMEOUT_S)
            for described in found:
                if described["topic"] == topic and described["error_code"] == 0:
                    return sorted(int(p["partition"]) for p in described["partitions"])
            if time.monotonic() >= deadline:
                return []
            await asyncio.sleep(TOPIC_POLL_S)

    async def beginning_offsets(self, topic: str, partitions: Iterable[int]) -> Offsets:
        """The first offset each partition still holds (above 0: retention deleted some)."""
        tps = [TopicPartition(topic, p) for p in partitions]
        if not tps:
            return {}
        found = await self.consumer.beginning_offsets(tps)
        return {tp.partition: found[tp] for tp in tps}

    async def end_offsets(self, topic: str, partitions: Iterable[int]) -> Offsets:
        """The offset the next record of each partition will get."""
        tps = [TopicPartition(topic, p) for p in partitions]
        if not tps:
            return {}
        found = await self.consumer.end_offsets(tps)
        return {tp.partition: found[tp] for tp in tps}

    async def committed(self, group: str, topic: str, partitions: Iterable[int]) -> Offsets:
        """The offsets consumer group ``group`` committed on ``partitions`` of ``topic``
        (the next offset it will read); partitions without one are left out."""
        tps = [TopicPartition(topic, p) for p in partitions]
        if not tps:
            return {}
        found = await asyncio.wait_for(
            self.admin.list_consumer_group_offsets(group, partitions=tps), REQUEST_TIMEOUT_S)
        return {tp.partition: meta.offset for tp, meta in found.items() if meta.offset >= 0}

    async def read_to_end(self, topic: str, partitions: Iterable[int] | None = None,
                          keep: Callable[[bytes | None], bool] | None = None,
                          ) -> list[ConsumerRecord]:
        """The records of ``partitions`` (default: all of them) from the beginning to the
        end offsets they had when the read began, in offset order per partition.

        Args:
            topic: the topic; a missing one has no records.
            partitions: the partitions to read.
            keep: which record keys to keep (default: every record).

        Raises:
            TimeoutError: not read within the reader's ``timeout_s``.
        """
        wanted = list(partitions) if partitions is not None else await self.partitions(topic)
        start = await self.beginning_offsets(topic, wanted)
        stop = await self.end_offsets(topic, wanted)
        found: list[ConsumerRecord] = []
        async for batch in self.batches(topic, start, stop):
            found += batch if keep is None else [r for r in batch if keep(r.key)]
        return found

    async def batches(self, topic: str, start: Offsets, stop: Offsets, *,
                      max_records: int | None = None, timeout_s: float | None = None,
                      ) -> AsyncIterator[list[ConsumerRecord]]:
        """The records at ``start[p] <= offset < stop[p]`` of each partition ``p`` of
        ``stop``, a fetch at a time (never an empty batch), in offset order per partition.

        Args:
            topic: the topic.
            start: the first offset per partition (missing: 0, the log's start).
            stop: the end offset per partition, exclusive.
            max_records: the most records one batch holds (default: no limit).
            timeout_s: how long the whole range may take, seconds (default: the reader's).

        Raises:
            TimeoutError: the range was not read in time.
        """
        left = {TopicPartition(topic, p) for p, end in stop.items() if start.get(p, 0) < end}
        async for batch in self._fetch(left, start, stop, max_records, timeout_s):
            yield batch

    async def follow(self, topic: str, start: Offsets, *, max_records: int | None = None,
                     timeout_s: float | None = None, poll_s: float = POLL_S,
                     ) -> AsyncIterator[list[ConsumerRecord]]:
        """The records of the partitions of ``start`` from those offsets on, as they
        come, without end: the caller stops iterating when it has what it waits for.

        Args:
            topic: the topic.
            start: the first offset per partition.
            max_records: the most records one batch holds (default: no limit).
            timeout_s: how long to follow, seconds (default: the reader's; ``math.inf``
                for ever).
            poll_s: the longest one fetch waits, seconds.

        Raises:
            TimeoutError: still iterated after ``timeout_s``.
        """
        tps = {TopicPartition(topic, p) for p in start}
        async for batch in self._fetch(tps, start, None, max_records, timeout_s, poll_s):
            yield batch

    async def _fetch(self, left: set[TopicPartition], start: Offsets, stop: Offsets | None,
                     max_records: int | None, timeout_s: float | None,
                     poll_s: float = POLL_S) -> AsyncIterator[list[ConsumerRecord]]:
        """Fetch ``left`` from ``start`` until each partition reaches ``stop`` (None:
        never), checking the deadline before each fetch."""
        if not left:
            return
        limit = self.timeout_s if timeout_s is None else timeout_s
        self.consumer.assign(list(left))
        for tp in left:
            self.consumer.seek(tp, start.get(tp.partition, 0))
        deadline = time.monotonic() + limit
        while left:
            if time.monotonic() > deadline:
                topic = next(iter(left)).topic
                if stop is None:
                    raise TimeoutError(f"followed {topic} for {limit:g} s")
                raise TimeoutError(f"reading {topic} took longer than {limit:g} s "
                                   f"({len(left)} partitions unfinished)")
            got = await self.consumer.getmany(*left, timeout_ms=round(poll_s * 1000),
                                              max_records=max_records)
            batch: list[ConsumerRecord] = []
            for tp, records in got.items():
                batch += records if stop is None else [
                    r for r in records if r.offset < stop[tp.partition]]
            if batch:
                yield batch
            if stop is not None:
                left = {tp for tp in left if await self.consumer.position(tp) < stop[tp.partition]}
