"""Reading new partitions' changelog fast (workaround 11 of the package's docstring):
``read_changelog``, which the memory store (``RestoringMemoryStore``) and the RocksDB
store (``rocks.PartitionedRocksStore``) restore with.

faust restores a table through the app's own consumer, one record at a time: each record
is made an event, handed from the fetcher to the recovery loop through a queue, and
waited for twice on the way (``Consumer._drain_messages`` and ``Recovery._slurp_changelogs``
each wrap it in a task). Measured on a coordinator restarted with an empty store (B9,
319,000 changelog records, 84 MB), that is about 9,000 records a second, and nothing
else is decided meanwhile.

Here, when partitions are assigned that this process did not hold, their changelog is
read from its start to its end offset with a plain consumer without a group
(``TopicReader``, fetches of ``RESTORE_FETCH_BYTES``), each record put straight into the
store's dict (the last record of a key wins; a tombstone deletes it). The store then
tells faust, through ``persisted_offset``, the offset of the last record it read, as a
persistent store would: faust's recovery seeks there and reads only what was written
since (none, unless another process still wrote the changelog). A read that fails falls
back to faust's own: the partitions' entries are dropped and their offset not given.
The RocksDB store reads the same way past each new partition DB's stored offset (from
the start for an empty or wiped one) into the DB, a ``WriteBatch`` a fetch, and stores
the offset reached.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aiokafka import ConsumerRecord
from faust.stores.memory import Store as MemoryStore
from faust.types import TP

from services.common.topic_reader import TopicReader
from services.coordinator.settings import Settings

log = logging.getLogger("headwater.coordinator")

RESTORE_FETCH_BYTES = 16 << 20
"""The most one fetch of a restore returns, bytes (aiokafka's ``fetch_max_bytes``); one
partition's share is at most a quarter of it (``max_partition_fetch_bytes``), or the
largest record when that is larger."""

ReaderFactory = Callable[[], TopicReader]
"""A reader of the coordinator's Kafka for one restore, not started
(``changelog_reader``)."""


RETRY_BACKOFF_MS = 20
"""How soon the clients a coordinator makes for one rebalance (a restore's reader, an
offsets client: ``app.offsets_client``) ask again for metadata they lack, ms (aiokafka's
``retry_backoff_ms``, 100 by default). Each is new and knows no topic, so its first
offsets request waits that long. At 100 ms a restart's recovery lasted long enough for
the app's consumer to send a fetch of input partitions with nothing new, held 1.5 s by
the broker, while the partitions with the new records waited to be fetched after it
(SIGKILL -> first record 3.6 s, against 2.0-2.5 s at 20 ms: B9's sizes, an idle
machine). It is also the pause between a failed request and the next, so during a
partition's leader election they ask again every 20 ms until their timeout."""


def changelog_reader(settings: Settings) -> ReaderFactory:
    """The readers of a coordinator's restores: its bootstrap servers and security,
    fetches of ``RESTORE_FETCH_BYTES`` (at least two of its largest records)."""
    fetch = max(RESTORE_FETCH_BYTES, 2 * settings.max_message_bytes)
    return lambda: TopicReader(settings.bootstrap, security=settings.kafka_security,
                               max_message_bytes=max(fetch // 4, settings.max_message_bytes),
                               fetch_max_bytes=fetch, retry_backoff_ms=RETRY_BACKOFF_MS)


async def read_changelog(new_reader: ReaderFactory, topic: str,
                         after: Mapping[int, int | None],
                         apply: Callable[[list[ConsumerRecord]], None]) -> dict[int, int]:
    """Read the changelog ``topic``'s partitions from past the offset ``after`` gives
    each (None: from the log's start) to their end offsets, a fetch at a time, each
    batch handed to ``apply`` (in offset order per partition), with a reader of
    ``new_reader``.

    Returns:
        Each partition that had records past its offset -> the offset of its last one.
    """
    started, records = time.monotonic(), 0
    partitions = sorted(after)
    async with new_reader() as reader:
        start = await reader.beginning_offsets(topic, partitions)
        for p, offset in after.items():
            if offset is not None:
                start[p] = max(start.get(p, 0), offset + 1)
        stop = await reader.end_offsets(topic, partitions)
        async for batch in reader.batches(topic, start, stop):
            apply(batch)
            records += len(batch)
    log.info("restored %s partitions %s from the changelog: %d records, %.2f s", topic,
             partitions, records, time.monotonic() - started)
    return {p: stop[p] - 1 for p in partitions if stop[p] > start.get(p, 0)}


class RestoringMemoryStore(MemoryStore[bytes, bytes]):
    """faust's ``memory://`` store, restoring newly assigned partitions itself.

    ``reader`` makes the ``TopicReader`` of a restore (None: faust restores, as its own
    store does).
    """

    def __init__(self, *args: Any, reader: ReaderFactory | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reader = reader
        self._restored: dict[TP, int] = {}

    def persisted_offset(self, tp: TP) -> int | None:
        """The offset of the last changelog record of ``tp`` that the current
        rebalance's restore read (faust reads on after it); None for a partition not
        restored in it (faust keeps its own offset of a partition it held, and reads a
        new one whole)."""
        return self._restored.get(tp)

    async def on_rebalance(self, assigned: set[TP], revoked: set[TP],
                           newly_assigned: set[TP], generation_id: int = 0) -> None:
        """Restore the changelog partitions in ``newly_assigned`` (faust calls this
        before its recovery asks ``persisted_offset``)."""
        await super().on_rebalance(assigned, revoked, newly_assigned, generation_id)
        self._restored = {}
        topic: str = self.table.changelog_topic.get_topic_name()
        partitions = sorted(tp.partition for tp in newly_assigned if tp.topic == topic)
        if self.reader is None or not partitions:
            return
        done = False
        try:
            self._restored = await self._restore(self.reader, topic, partitions)
            done = True
        except Exception as e:  # any failure: faust reads these partitions whole
            log.warning("restoring %s partitions %s failed (%s: %s); faust reads them",
                        topic, partitions, type(e).__name__, e)
        finally:
            if not done:  # also when cancelled: no partition left half read
                self._drop(set(partitions))

    async def _restore(self, new_reader: ReaderFactory, topic: str,
                       partitions: list[int]) -> dict[TP, int]:
        """Read ``partitions`` of the changelog ``topic`` from their start to their end
        offsets into the store, with a reader of ``new_reader``.

        Returns:
            Each partition that holds records -> the offset of its last record.
        """
        self._drop(set(partitions))
        read = await read_changelog(new_reader, topic, dict.fromkeys(partitions), self._apply)
        return {TP(topic, p): offset for p, offset in read.items()}

    def _apply(self, batch: Iterable[ConsumerRecord]) -> None:
        """Put a batch of changelog records into the store, in order: the last record of
        a key wins, a tombstone (value None) deletes the key."""
        data, partition_of = self.data, self._key_partition
        for record in batch:
            key = record.key
            if record.value is None:
                data.pop(key, None)
                partition_of.pop(key, None)
            else:
                data[key] = record.value
                partition_of[key] = record.partition

    def _drop(self, partitions: set[int]) -> None:
        """Drop the entries of ``partitions`` (read again whole), by the table's
        ``partition_for_key``: faust notes the partition only of the entries it restored,
        not of those this process wrote."""
        partition_for_key = self.table.partition_for_key
        gone = [key for key in self.data if partition_for_key(key) in partitions]
        for key in gone:
            del self.data[key]
            self._key_partition.pop(key, None)
