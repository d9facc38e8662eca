"""What a partition's RocksDB of the workflow table keeps beside its entries, and whether
a restarted coordinator may keep it: the changelog's facts read from the broker at start
(``ChangelogFacts``, ``read_changelog_facts``), the rules that wipe a DB instead
(``wipe_reason``), and the memory RocksDB may take (``bounded_options``).

A partition's DB is the fold of a prefix of its changelog, up to the offset it stores
(``rocks.PartitionedRocksStore``). Reading the changelog on from that offset gives the
table back, unless what lies past it is no longer what was written there:

- **Tombstones compacted away.** Kafka keeps a delete marker ``delete.retention.ms``
  after the cleaner reached it, then drops it. A DB last brought up to date longer ago
  than that may miss deletes the changelog no longer says (purged workflows, ended
  schedule runs, a cleared intent slot would come back): it is wiped when its settle
  time is older than ``RETENTION_MARGIN`` of ``delete.retention.ms``.
- **Another topic under the same name** (deleted and created again). aiokafka 0.14
  asks for metadata up to version 5, which carries no topic id, so the topic's identity
  is judged by its offsets: a stored offset at or past the partition's high watermark,
  or below its log start offset less one, cannot be a record of this topic as it is,
  and the DB is wiped (faust would raise ``ConsistencyError`` at every start for the
  first, and silently skip the records in between for the second).

A wiped DB is restored from the changelog's beginning, as the memory store always is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import rocksdict
from faust.stores import rocksdb as faust_rocksdb

from services.common.kafka.client import describe_config
from services.common.topic_reader import TopicReader

log = logging.getLogger("headwater.coordinator")

DEFAULT_DELETE_RETENTION_MS = 86_400_000
"""Kafka's default ``delete.retention.ms`` (24 hours), assumed when the broker does not
say the changelog's."""
RETENTION_MARGIN = 0.9
"""The part of ``delete.retention.ms`` a DB may be old and still be kept: 10 % of it is
left for clocks and for the cleaner's own schedule."""
SETTLED_KEY = b"__headwater\0settled_ms__"
"""The key of a partition DB's settle time (wall clock, milliseconds since the epoch, as
ASCII digits), written in the same ``WriteBatch`` as faust's offset key. No table key
starts with it (workflow ids hold no NUL; intent keys start with ``\\x1f``)."""
BLOCK_CACHE_BYTES = 8 << 20
"""RocksDB's block cache, shared by every partition DB of the process, bytes (faust's
default is 2 GiB per DB). Live workflows are decoded once and kept in ``TableStore``'s
cache, so the block cache serves mostly a restart's scan and the retention sweep: at
32 MiB it was full with 100,000 finished workflows in the table, and with the memtables
(32 MiB then) held 59 MiB of the coordinator's RSS (22 MiB at these sizes)."""
WRITE_BUFFER_BYTES = 4 << 20
"""The size of one memtable of a partition DB, bytes (faust's default is 64 MiB)."""
MEMTABLES_BYTES = 16 << 20
"""The memtables of every partition DB of the process together, bytes (one
``WriteBufferManager``): past it RocksDB flushes the largest, so the memory RocksDB takes
does not grow with the partitions held (8 partitions of 2 memtables were 128 MiB). A
coordinator writes about 0.8 MB of entries a second at a thousand tasks a second (B4),
so this is a flush every 20 s or so at that rate."""
WRITE_BUFFERS = 2
"""Memtables a partition DB may hold, the one being written and one being flushed
(faust's default is 3)."""


@dataclass(frozen=True)
class ChangelogFacts:
    """What the broker said about the changelog topic when the coordinator started.

    Attributes:
        delete_retention_ms: the topic's ``delete.retention.ms``, milliseconds.
        log_start: partition -> its log start offset (the first offset it still holds).
        high_watermark: partition -> the offset its next record will get. A partition
            missing here (the topic did not exist) has neither: 0 for both.
    """

    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS
    log_start: dict[int, int] = field(default_factory=dict)
    high_watermark: dict[int, int] = field(default_factory=dict)


def wipe_reason(partition: int, offset: int | None, settled_ms: int | None,
                facts: ChangelogFacts, now_ms: int, check_bounds: bool) -> str | None:
    """Why the partition's DB must be wiped before its recovery, or None to keep it.

    Args:
        partition: the changelog partition.
        offset: the DB's persisted changelog offset (None: a DB that holds none, empty
            or never brought up to any offset: nothing to keep or to check).
        settled_ms: the wall-clock time its offset was written, ms since the epoch (None:
            not recorded).
        facts: the changelog's retention and offsets.
        now_ms: the wall clock now, ms since the epoch.
        check_bounds: compare ``offset`` with the offsets the broker gave at start
            (only for the first open in a process: later the DB may hold offsets past
            them, written by this process).
    """
    if offset is None:
        return None
    stale = _stale(settled_ms, facts.delete_retention_ms, now_ms)
    if stale is not None or not check_bounds:
        return stale
    return _outside(offset, facts.log_start.get(partition, 0),
                    facts.high_watermark.get(partition, 0))


def _stale(settled_ms: int | None, delete_retention_ms: int, now_ms: int) -> str | None:
    if settled_ms is None:
        return "no settle time recorded"
    if now_ms - settled_ms > delete_retention_ms * RETENTION_MARGIN:
        return (f"settled {(now_ms - settled_ms) / 3_600_000:.1f} h ago, past "
                f"{RETENTION_MARGIN:.0%} of the changelog's delete.retention.ms "
                f"({delete_retention_ms} ms): deletes may have been compacted away")
    return None


def _outside(offset: int, start: int, high: int) -> str | None:
    if offset >= high:
        return f"offset {offset} at or past the changelog's high watermark {high}"
    if offset + 1 < start:
        return f"offset {offset} below the changelog's log start offset {start} less one"
    return None


async def read_changelog_facts(reader: TopicReader, topic: str) -> ChangelogFacts:
    """The changelog's ``delete.retention.ms`` and each partition's log start offset and
    high watermark, from the broker, through a started ``reader``. A topic that does not
    exist yet has no partitions and the default retention; a retention the broker does
    not give is ``DEFAULT_DELETE_RETENTION_MS``, logged.

    Raises:
        KafkaError: the broker could not be reached for the offsets.
    """
    partitions = await reader.partitions(topic)
    if not partitions:  # not created yet: faust creates it, with the broker's default
        return ChangelogFacts()
    start = await reader.beginning_offsets(topic, partitions)
    high = await reader.end_offsets(topic, partitions)
    retention = await _delete_retention_ms(reader, topic)
    return ChangelogFacts(retention, start, high)


async def _delete_retention_ms(reader: TopicReader, topic: str) -> int:
    try:
        return int((await describe_config(reader.admin, topic))["delete.retention.ms"])
    except Exception as e:  # any failure: the broker's default
        log.warning("cannot read delete.retention.ms of %s (%s: %s); taking %d ms", topic,
                    type(e).__name__, e, DEFAULT_DELETE_RETENTION_MS)
        return DEFAULT_DELETE_RETENTION_MS


class BoundedOptions(faust_rocksdb.RocksDBOptions):
    """faust's RocksDB options with the memory bounded: ``WRITE_BUFFERS`` memtables of
    ``WRITE_BUFFER_BYTES`` per DB, at most ``MEMTABLES_BYTES`` of them in all, and one
    block cache of ``BLOCK_CACHE_BYTES``, both shared by the DBs opened with these options
    (faust makes one cache per DB)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("write_buffer_size", WRITE_BUFFER_BYTES)
        kwargs.setdefault("max_write_buffer_number", WRITE_BUFFERS)
        kwargs.setdefault("block_cache_size", BLOCK_CACHE_BYTES)
        super().__init__(**kwargs)
        self.cache = rocksdict.Cache(self.block_cache_size)
        self.memtables = rocksdict.WriteBufferManager(MEMTABLES_BYTES, False)

    def open(self, path: Any, *, read_only: bool = False) -> Any:
        """Open the DB at ``path`` as faust does, with these options for its default
        column family as well as for the DB: given only the DB's, rocksdict opens an
        existing DB with the column family options of its OPTIONS file and a new block
        cache of its own default size (8 MiB). After a restart every partition's DB then
        kept its own 8 MiB of blocks: a coordinator of 8 partitions held 64 MiB of them,
        not ``BLOCK_CACHE_BYTES`` (B9 with 100,000 finished workflows)."""
        access = (rocksdict.AccessType.read_write() if self.ttl is None
                  else rocksdict.AccessType.with_ttl(self.ttl))
        db = rocksdict.Rdict(str(path), options=self.as_options(),
                             column_families={"default": self.as_options()},
                             access_type=access)
        db.set_read_options(rocksdict.ReadOptions())
        return db

    def as_options(self) -> Any:
        """faust's options, with the shared block cache and write buffer manager."""
        options = super().as_options()
        options.set_write_buffer_manager(self.memtables)
        table = rocksdict.BlockBasedOptions()
        table.set_bloom_filter(self.bloom_filter_size, block_based=True)
        table.set_block_cache(self.cache)
        table.set_index_type(rocksdict.BlockBasedIndexType.binary_search())
        options.set_block_based_table_factory(table)
        return options
