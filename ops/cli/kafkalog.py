"""Read the log for the audit commands: history events and the coordinator table's
changelog, from the beginning to the end each partition had when the read began, without
a consumer group (nothing is committed; the services are not disturbed). The reading
itself is ``services.common.topic_reader``'s."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from ops.cli.endpoints import Endpoints
from ops.history import Recorded
from services.common.partitioning import partition_for
from services.common.topic_reader import READ_TIMEOUT_S, TopicReader
from services.coordinator.keys import TABLE_KEY_SEP, table_entry_key


class KafkaLog:
    """A consumer without a group that reads whole partitions; use ``async with``."""

    def __init__(self, endpoints: Endpoints, timeout_s: float = READ_TIMEOUT_S) -> None:
        self.endpoints = endpoints
        self.reader = TopicReader(endpoints.bootstrap,
                                  max_message_bytes=endpoints.max_message_bytes,
                                  timeout_s=timeout_s, security=endpoints.kafka_security)

    async def __aenter__(self) -> KafkaLog:
        await self.reader.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.reader.stop()

    async def partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic`` (empty when it does not exist)."""
        return await self.reader.partitions(topic)

    async def scan(self, topic: str, partitions: list[int],
                   keep: Callable[[bytes | None], bool]) -> list[Any]:
        """The records of ``partitions`` whose key ``keep`` accepts, from the beginning
        to the end offsets they had when the scan began, in offset order per partition.

        Raises:
            TimeoutError: the partitions were not read within the timeout.
        """
        return await self.reader.read_to_end(topic, partitions, keep)

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
        home = partition_for(workflow_id.encode(), len(partitions))
        return (await self.reader.committed(group, topic, [home])).get(home)


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
