"""Read the log for the audit commands: history events and the coordinator table's
changelog, from the beginning to the end each partition had when the read began, without
a consumer group (nothing is committed; the services are not disturbed)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.partitioner import murmur2

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from ops.cli.endpoints import Endpoints
from ops.history import Recorded
from services.coordinator.keys import TABLE_KEY_SEP, table_entry_key

READ_TIMEOUT_S = 300.0


async def topic_partitions(admin: AIOKafkaAdminClient, topic: str) -> list[int]:
    """The partitions of ``topic`` (empty when it does not exist)."""
    (found,) = await asyncio.wait_for(admin.describe_topics([topic]), 30)
    if found["error_code"] != 0:
        return []
    return sorted(int(p["partition"]) for p in found["partitions"])


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner (murmur2) gives ``key``."""
    hashed: int = murmur2(key)
    return (hashed & 0x7FFFFFFF) % partitions


class KafkaLog:
    """A consumer without a group that reads whole partitions; use ``async with``."""

    def __init__(self, endpoints: Endpoints, timeout_s: float = READ_TIMEOUT_S) -> None:
        self.endpoints = endpoints
        self.timeout_s = timeout_s
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=endpoints.bootstrap, group_id=None, enable_auto_commit=False,
            auto_offset_reset="earliest", max_partition_fetch_bytes=endpoints.max_message_bytes,
            fetch_max_bytes=endpoints.max_message_bytes * 2, request_timeout_ms=30_000)

        self.admin = AIOKafkaAdminClient(bootstrap_servers=endpoints.bootstrap,
                                         request_timeout_ms=30_000)

    async def __aenter__(self) -> KafkaLog:
        try:
            await self.consumer.start()
            await self.admin.start()
        except BaseException:
            await self.consumer.stop()
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            await self.admin.close()
        finally:
            await self.consumer.stop()

    async def partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic`` (empty when it does not exist)."""
        return await topic_partitions(self.admin, topic)

    async def scan(self, topic: str, partitions: list[int],
                   keep: Callable[[bytes | None], bool]) -> list[Any]:
        """The records of ``partitions`` whose key ``keep`` accepts, from the beginning
        to the end offsets they had when the scan began, in offset order per partition.

        Raises:
            TimeoutError: the partitions were not read within the timeout.
        """
        tps = [TopicPartition(topic, p) for p in partitions]
        if not tps:
            return []
        self.consumer.assign(tps)
        await self.consumer.seek_to_beginning(*tps)
        ends: dict[TopicPartition, int] = await self.consumer.end_offsets(tps)
        left = {tp for tp in tps if await self.consumer.position(tp) < ends[tp]}
        found: list[Any] = []
        deadline = time.monotonic() + self.timeout_s
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} took longer than {self.timeout_s:g} s")
            batches = await self.consumer.getmany(*left, timeout_ms=500)
            for tp, records in batches.items():
                found += [r for r in records if r.offset < ends[tp] and keep(r.key)]
            left = {tp for tp in left if await self.consumer.position(tp) < ends[tp]}
        return found

    async def workflow_events(self, workflow_id: str) -> tuple[list[Recorded], list[str]]:
        """The workflow's records on the events topic, in log order.

        Reads the partition its key hashes to; if nothing is there, every partition (a
        producer with another partitioner).

        Returns:
            The decoded records, and one line per record that could not be decoded.
        """
        topic = self.endpoints.topics.events
        partitions = await self.partitions(topic)
        if not partitions:
            return [], []
        key = workflow_id.encode()

        def mine(k: bytes | None) -> bool:
            return k == key

        home = partition_for(key, len(partitions))
        raw = await self.scan(topic, [home], mine)
        if not raw:
            raw = await self.scan(topic, [p for p in partitions if p != home], mine)
        recorded, problems = decode_events(raw)
        problems += [f"a record keyed {workflow_id} at offset {r.offset} holds an event of "
                     f"{wid}" for wid, r in recorded if wid != workflow_id]
        return [r for wid, r in recorded if wid == workflow_id], problems

    async def all_events(self) -> tuple[dict[str, list[Recorded]], list[str]]:
        """Every workflow's records on the events topic, in log order.

        Returns:
            Records by workflow id, and one line per record that could not be decoded.
        """
        topic = self.endpoints.topics.events
        raw = await self.scan(topic, await self.partitions(topic), lambda key: True)
        recorded, problems = decode_events(raw)
        by_workflow: dict[str, list[Recorded]] = {}
        for workflow_id, r in recorded:
            by_workflow.setdefault(workflow_id, []).append(r)
        return by_workflow, problems

    async def table_entries(self, workflow_id: str) -> dict[str, bytes]:
        """The workflow's current entries in the coordinator table's changelog.

        Returns:
            Part -> value: ``""`` for the header, else the part (``@def``, a task key).
            The last record of a key wins; a tombstone removes it.
        """
        topic = self.endpoints.topics.table_changelog
        partitions = await self.partitions(topic)
        if not partitions:
            return {}
        header = table_entry_key(workflow_id)
        prefix = header + TABLE_KEY_SEP.encode()

        def mine(key: bytes | None) -> bool:
            return key is not None and (key == header or key.startswith(prefix))

        home = partition_for(header, len(partitions))
        entries: dict[str, bytes] = {}
        for r in await self.scan(topic, [home], mine):
            part = bytes(r.key)[len(prefix):].decode() if r.key != header else ""
            if r.value is None:
                entries.pop(part, None)
            else:
                entries[part] = bytes(r.value)
        return entries

    async def committed(self, group: str, topic: str, workflow_id: str) -> int | None:
        """The committed offset of consumer group ``group`` on the partition of ``topic``
        that holds ``workflow_id`` (None when the group has none)."""
        partitions = await self.partitions(topic)
        if not partitions:
            return None
        tp = TopicPartition(topic, partition_for(workflow_id.encode(), len(partitions)))
        offsets = await asyncio.wait_for(
            self.admin.list_consumer_group_offsets(group, partitions=[tp]), 30)
        meta = offsets.get(tp)
        return meta.offset if meta is not None and meta.offset >= 0 else None


def decode_events(records: list[Any]) -> tuple[list[tuple[str, Recorded]], list[str]]:
    """Decode events-topic records into ``(workflow id, Recorded)``; undecodable ones (or
    ones that are no ``HistoryEvent``) become one line each."""
    out: list[tuple[str, Recorded]] = []
    problems: list[str] = []
    for r in records:
        where = f"{r.topic}[{r.partition}]@{r.offset}"
        try:
            event = codec.decode(r.value)
        except DecodeError as e:
            problems.append(f"undecodable record at {where}: {e}")
            continue
        if not isinstance(event, ev.HistoryEvent):
            problems.append(f"a {type(event).__name__} at {where}, not a HistoryEvent")
            continue
        out.append((event.workflow_id, Recorded(event, r.offset, r.timestamp)))
    return out, problems
