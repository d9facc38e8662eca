"""When a partition's RocksDB is kept at open and when it is wiped
(``faust_seam.partition_db.wipe_reason``), a revoked partition's DB, the memory bounds
and the headers' iteration, on real RocksDB files and no broker."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest
from faust.types import TP
from test_coordinator_rocks_store import PARTITIONS, Producer, make

from services.coordinator import changelog
from services.coordinator.faust_seam import app as seam
from services.coordinator.faust_seam.partition_db import (
    BLOCK_CACHE_BYTES,
    DEFAULT_DELETE_RETENTION_MS,
    SETTLED_KEY,
    WRITE_BUFFER_BYTES,
    WRITE_BUFFERS,
    ChangelogFacts,
    wipe_reason,
)
from services.coordinator.keys import entry_partition, intent_key, table_entry_key
from services.coordinator.store import TableStore

DAY = DEFAULT_DELETE_RETENTION_MS
NOW = 1_800_000_000_000
FACTS = ChangelogFacts(DAY, {0: 0}, {0: 100})


@pytest.mark.parametrize(("offset", "settled", "facts", "bounds", "wiped"), [
    (None, None, FACTS, True, False),            # nothing stored: nothing to keep
    (50, None, FACTS, True, True),               # an offset without a settle time
    (50, NOW - DAY // 2, FACTS, True, False),    # half the retention: kept
    (50, NOW - DAY * 89 // 100, FACTS, True, False),  # 89 %: kept
    (50, NOW - DAY * 91 // 100, FACTS, True, True),   # past 90 %: wiped
    (50, NOW - 2_000, ChangelogFacts(1_000, {0: 0}, {0: 100}), True, True),
    (99, NOW, FACTS, True, False),               # the last record of the partition
    (100, NOW, FACTS, True, True),               # at the high watermark: another topic
    (500, NOW, ChangelogFacts(), True, True),    # the topic does not exist
    (500, NOW, FACTS, False, False),             # bounds not checked on a later open
    (9, NOW, ChangelogFacts(DAY, {0: 10}, {0: 100}), True, False),  # log start less one
    (8, NOW, ChangelogFacts(DAY, {0: 10}, {0: 100}), True, True),   # records missed
])
def test_wipe_reason(offset: int | None, settled: int | None, facts: ChangelogFacts,
                     bounds: bool, wiped: bool) -> None:
    assert (wipe_reason(0, offset, settled, facts, NOW, bounds) is not None) == wiped


async def _written(tmp_path: Path) -> tuple[bytes, int, str]:
    """A table with one settled entry, closed: its key, partition and changelog topic."""
    _, table = make(tmp_path, Producer())
    key = table_entry_key("wf-1")
    await changelog.write(table, [(key, b"v1")])
    topic: str = table.changelog_topic.get_topic_name()
    table.data.close_all()
    return key, entry_partition(key, PARTITIONS), topic


async def test_the_settle_time_is_stored_with_the_offset(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer(), now_ms=lambda: NOW)
    key = table_entry_key("wf-1")
    p = entry_partition(key, PARTITIONS)
    await changelog.write(table, [(key, b"v1")])
    assert table.data._dbs[p].get(SETTLED_KEY) == str(NOW).encode()
    assert table.data._dbs[(p + 1) % PARTITIONS].get(SETTLED_KEY) is None
    assert key in list(table.keys()) and SETTLED_KEY not in list(table.keys())
    table.data.close_all()


async def test_a_db_older_than_the_delete_retention_is_wiped_at_open(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    key, p, topic = await _written(tmp_path)
    later = int(time.time() * 1000) + DAY * 95 // 100
    with caplog.at_level(logging.INFO, "headwater.coordinator"):
        _, again = make(tmp_path, Producer(), now_ms=lambda: later)
    assert seam.read_entry(again, key) is None
    assert again.data.persisted_offset(TP(topic, p)) is None  # read from the start
    assert f"table partition {p}: wiping its local store (settled" in caplog.text
    again.data.close_all()


async def test_a_db_within_the_delete_retention_is_kept(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    key, p, topic = await _written(tmp_path)
    later = int(time.time() * 1000) + DAY // 2
    with caplog.at_level(logging.INFO, "headwater.coordinator"):
        _, again = make(tmp_path, Producer(), now_ms=lambda: later)
    assert seam.read_entry(again, key) == b"v1"
    assert again.data.persisted_offset(TP(topic, p)) == 10
    assert f"table partition {p}: local store at changelog offset 10" in caplog.text
    again.data.close_all()


@pytest.mark.parametrize(("start", "high", "kept"), [
    (0, 11, True), (0, 10, False), (0, 0, False), (12, 20, False), (11, 20, True)])
async def test_an_offset_outside_the_changelog_wipes_the_db(
        tmp_path: Path, start: int, high: int, kept: bool) -> None:
    """A recreated changelog: the stored offset (10) past its high watermark, or before
    its log start less one."""
    key, p, topic = await _written(tmp_path)
    facts = ChangelogFacts(DAY, dict.fromkeys(range(PARTITIONS), start),
                           dict.fromkeys(range(PARTITIONS), high))
    _, again = make(tmp_path, Producer(), facts)
    assert (seam.read_entry(again, key) == b"v1") == kept
    assert again.data.persisted_offset(TP(topic, p)) == (10 if kept else None)
    again.data.close_all()


async def test_a_settle_for_a_revoked_partition_writes_nothing_to_it(tmp_path: Path) -> None:
    producer = Producer(hold=True)
    _, table = make(tmp_path, producer)
    store = table.data
    topic = table.changelog_topic.get_topic_name()
    key = table_entry_key("wf-1")
    p = entry_partition(key, PARTITIONS)
    other = intent_key((p + 1) % PARTITIONS)
    done = changelog.write(table, [(key, b"v1"), (other, b"slot")])
    await asyncio.sleep(0)
    store.revoke_partitions(table, {TP(topic, p)})
    assert p not in store._dbs and seam.read_entry(table, key) is None
    producer.ack()
    await done  # no reopening, no lock refused
    assert p not in store._dbs and store.staged == 0 and not store._pending
    assert store._dbs[(p + 1) % PARTITIONS].get(other) == b"slot"
    db = store._db_for_partition(p)  # assigned again: the handle was closed, no lock held
    assert db.get(key) is None and store.persisted_offset(TP(topic, p)) is None
    store.close_all()


async def test_a_revoked_partition_reopens_at_once(tmp_path: Path) -> None:
    key, p, topic = await _written(tmp_path)
    _, table = make(tmp_path, Producer())
    for _ in range(3):
        table.data.revoke_partitions(table, {TP(topic, p)})
        table.data._db_for_partition(p)
    assert seam.read_entry(table, key) == b"v1"
    table.data.close_all()


async def test_rocksdb_memory_is_bounded(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    store = table.data
    for p, db in store._dbs.items():
        assert db.property_int_value("rocksdb.block-cache-capacity") == BLOCK_CACHE_BYTES
        [options] = sorted(store.partition_path(p).glob("OPTIONS-*"))[-1:]
        text = options.read_text()
        assert f"write_buffer_size={WRITE_BUFFER_BYTES}\n" in text
        assert f"max_write_buffer_number={WRITE_BUFFERS}\n" in text
    await changelog.write(table, [(table_entry_key(f"wf-{i}"), b"x" * 5000)
                                  for i in range(200)])
    for db in store._dbs.values():
        db.flush()
        db.get(table_entry_key("wf-1"))
    usage = store.rocksdb_options.cache.get_usage()
    assert 0 < usage <= BLOCK_CACHE_BYTES  # one cache, shared by every partition's DB
    store.close_all()


async def test_dbs_reopened_after_a_restart_share_the_one_cache(tmp_path: Path) -> None:
    """An existing DB is opened with the shared cache too, not one of its own that its
    OPTIONS file describes (rocksdict's default for a DB it finds on disk)."""
    _, table = make(tmp_path, Producer())
    keys = [table_entry_key(f"wf-{i}") for i in range(400)]
    await changelog.write(table, [(k, b"x" * 5000) for k in keys])
    for db in table.data._dbs.values():
        db.flush()
    table.data.close_all()
    _, table = make(tmp_path, Producer())  # the next process, on the same directory
    store = table.data
    assert {seam.read_entry(table, k) for k in keys} == {b"x" * 5000}
    shared = store.rocksdb_options.cache.get_usage()
    assert 0 < shared <= BLOCK_CACHE_BYTES
    assert len(store._dbs) > 1
    assert {db.property_int_value("rocksdb.block-cache-usage")
            for db in store._dbs.values()} == {shared}
    store.close_all()


async def test_the_headers_are_iterated_without_the_other_entries(tmp_path: Path) -> None:
    producer = Producer()
    _, table = make(tmp_path, producer)
    settled = [(table_entry_key(f"wf-{i}"), b"h%d" % i) for i in range(6)]
    await changelog.write(table, [*settled, (table_entry_key("wf-0", "@def"), b"d"),
                                  (table_entry_key("wf-0", "a"), b"t"), (intent_key(1), b"i")])
    producer.hold = True
    changelog.write(table, [(table_entry_key("wf-9"), b"staged"),
                            (table_entry_key("wf-1"), None), (table_entry_key("wf-2"), b"new")])
    await asyncio.sleep(0)
    expected = dict(settled) | {table_entry_key("wf-9"): b"staged",
                                table_entry_key("wf-2"): b"new"}
    del expected[table_entry_key("wf-1")]
    assert dict(seam.read_headers(table)) == expected
    assert sorted(seam.read_headers(table)) == sorted(expected.items())  # each once
    assert TableStore(table).scan() == []  # headers that are no workflow: not decoded
    producer.ack()
    table.data.close_all()
