"""The workflow table on faust's RocksDB store (``faust_seam.rocks``), no broker: the
producer is a stand-in whose acknowledgements the test releases. Writes are routed by
key and written behind the changelog (a partition's DB holds a prefix of it)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import faust
import pytest
from faust.types import TP

from services.coordinator import changelog
from services.coordinator.faust_seam import app as seam
from services.coordinator.faust_seam.partition_db import ChangelogFacts
from services.coordinator.faust_seam.rocks import PartitionedRocksStore
from services.coordinator.intents import Intent, IntentLog
from services.coordinator.keys import entry_partition, intent_key, table_entry_key
from services.coordinator.settings import Settings
from services.coordinator.store import TableStore

PARTITIONS = 4


class Producer:
    """Records sends; each send's future resolves when ``ack`` is called (or at once)."""

    def __init__(self, hold: bool = False) -> None:
        self.hold = hold
        self.sent: list[tuple[Any, ...]] = []
        self.waiting: list[tuple[asyncio.Future[Any], Any]] = []

    async def send(self, *args: Any) -> Any:
        self.sent.append(args)
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        meta = SimpleNamespace(partition=args[3], offset=len(self.sent) * 10)
        if self.hold:
            self.waiting.append((done, meta))
        else:
            done.set_result(meta)
        return done

    def ack(self) -> None:
        for done, meta in self.waiting:
            done.set_result(meta)
        self.waiting.clear()


def make(datadir: Path, producer: Producer, facts: ChangelogFacts | None = None,
         now_ms: Callable[[], int] | None = None) -> tuple[faust.App, Any]:
    """A coordinator's app and table on RocksDB under ``datadir``, every partition this
    process's and its DB open, as after a rebalance (``facts``: by default every stored
    offset within the changelog's bounds; ``now_ms``: the store's wall clock)."""
    settings = dataclasses.replace(Settings.from_env(), store="rocksdb://",
                                   data_dir=str(datadir))
    app = seam.build_app(settings, 10.0)
    table = seam.add_table(app, "workflows", PARTITIONS)
    table.changelog_facts = facts or ChangelogFacts(
        high_watermark=dict.fromkeys(range(PARTITIONS), 1 << 40))
    if now_ms is not None:
        table.data.now_ms = now_ms
    app.producer = producer  # type: ignore[assignment]
    app.assignor._assignment = SimpleNamespace(  # type: ignore[attr-defined]
        actives={table.changelog_topic.get_topic_name(): set(range(PARTITIONS))})
    for p in range(PARTITIONS):
        table.data._db_for_partition(p)
    return app, table


async def test_the_rocksdb_url_gives_the_routed_store(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    assert isinstance(table.data, PartitionedRocksStore)
    table.data.close_all()


async def test_entries_are_read_at_once_and_reach_rocksdb_only_once_acknowledged(
        tmp_path: Path) -> None:
    producer = Producer(hold=True)
    _, table = make(tmp_path, producer)
    store = table.data
    key = table_entry_key("wf-1")
    p = entry_partition(key, PARTITIONS)
    done = changelog.write(table, [(key, b"v1"), (intent_key(1), b"slot")])
    await asyncio.sleep(0)
    assert seam.read_entry(table, key) == b"v1"  # read-your-writes, from the overlay
    assert store._dbs[p].get(key) is None  # not on disk before the ack
    assert sorted(table.keys()) == sorted([key, intent_key(1)])
    producer.ack()
    await done
    assert store._dbs[p].get(key) == b"v1"
    topic = table.changelog_topic.get_topic_name()
    assert store.persisted_offset(TP(topic, p)) == 10
    assert store.persisted_offset(TP(topic, 1)) == 20
    assert store.staged == 0 and not store._pending
    store.close_all()


async def test_a_kill_before_the_ack_leaves_rocksdb_at_the_last_acknowledged_group(
        tmp_path: Path) -> None:
    producer = Producer()
    _, table = make(tmp_path, producer)
    key = table_entry_key("wf-1")
    await changelog.write(table, [(key, b"v1")])
    producer.hold = True
    pending = changelog.write(table, [(key, b"v2"), (intent_key(0), None),
                                      (table_entry_key("wf-2"), b"new")])
    await asyncio.sleep(0)
    assert seam.read_entry(table, key) == b"v2"
    table.data.close_all()  # SIGKILL: the ack never comes
    pending.cancel()
    _, again = make(tmp_path, Producer())
    assert seam.read_entry(again, key) == b"v1"
    assert seam.read_entry(again, table_entry_key("wf-2")) is None
    topic = again.changelog_topic.get_topic_name()
    p = entry_partition(key, PARTITIONS)
    assert again.data.persisted_offset(TP(topic, p)) == 10  # the tail is read from here
    again.data.close_all()


async def test_groups_reach_rocksdb_in_stage_order(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    store: PartitionedRocksStore = table.data
    key = table_entry_key("wf-1")
    p = entry_partition(key, PARTITIONS)
    first = store.stage([(key, b"a")])
    second = store.stage([(key, b"b")])
    store.settle(second, {p: 20})  # acknowledged first: waits for the first
    assert store._dbs[p].get(key) is None and seam.read_entry(table, key) == b"b"
    store.settle(first, {p: 10})
    assert store._dbs[p].get(key) == b"b" and not store._pending
    assert store.persisted_offset(TP(table.changelog_topic.get_topic_name(), p)) == 20
    store.close_all()


async def test_deletes_and_keys_go_through_every_partitions_db(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    keys = [table_entry_key(f"wf-{i}") for i in range(20)]
    await changelog.write(table, [(k, b"x") for k in keys])
    assert {entry_partition(k, PARTITIONS) for k in keys} == set(range(PARTITIONS))
    assert sorted(table.keys()) == sorted(keys)
    await changelog.write(table, [(keys[0], None)])
    assert sorted(table.keys()) == sorted(keys[1:])
    assert seam.read_entry(table, keys[0]) is None
    table.data.close_all()


async def test_an_intent_survives_a_restart_and_its_clearing_too(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    log = IntentLog(TableStore(table))
    key = table_entry_key("wf-1")
    await asyncio.gather(*log.record({2: Intent([(key, b"v")], [], {key: b""})}))
    table.data.close_all()
    _, again = make(tmp_path, Producer())
    log = IntentLog(TableStore(again))
    found, bad = log.pending(range(PARTITIONS))
    assert list(found) == [2] and not bad
    await asyncio.gather(*log.clear([2]))
    again.data.close_all()
    _, third = make(tmp_path, Producer())
    assert IntentLog(TableStore(third)).pending(range(PARTITIONS)) == ({}, {})
    third.data.close_all()


async def test_a_revoked_partition_is_not_read(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    key = table_entry_key("wf-1")
    p = entry_partition(key, PARTITIONS)
    await changelog.write(table, [(key, b"v")])
    topic = table.changelog_topic.get_topic_name()
    table.data.revoke_partitions(table, {TP(topic, p)})
    assert seam.read_entry(table, key) is None
    table.data.close_all()


@pytest.mark.parametrize("count", [0])
async def test_an_empty_write_settles(tmp_path: Path, count: int) -> None:
    _, table = make(tmp_path, Producer())
    await changelog.write(table, [])
    assert table.data.staged == count
    table.data.close_all()


async def test_fausts_recovery_applies_the_tail_and_moves_the_offset(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    topic = table.changelog_topic.get_topic_name()
    key = table_entry_key("wf-1")
    p = entry_partition(key, PARTITIONS)
    await changelog.write(table, [(key, b"v1")])

    def event(offset: int, value: bytes | None) -> Any:
        message = SimpleNamespace(tp=TP(topic, p), partition=p, offset=offset, key=key,
                                  value=value)
        return SimpleNamespace(message=message, key=key, value=value)

    table.data.apply_changelog_batch([event(10, b"v1"), event(11, b"v2")], None, None)
    assert seam.read_entry(table, key) == b"v2"
    assert table.persisted_offset(TP(topic, p)) == 11
    table.data.apply_changelog_batch([event(12, None)], None, None)
    assert seam.read_entry(table, key) is None
    table.data.close_all()


# What faust's own RocksDB store does, that the routed store answers.

async def test_fausts_rocksdb_store_writes_only_inside_an_event(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    from faust.stores import rocksdb as faust_rocksdb
    with pytest.raises(AssertionError):
        faust_rocksdb.Store._set(table.data, b"k", b"v")
    table.data.close_all()


async def test_fausts_rocksdb_store_reads_outside_an_event_from_any_open_db(
        tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    from faust.stores import rocksdb as faust_rocksdb
    key = table_entry_key("wf-1")
    wrong = (entry_partition(key, PARTITIONS) + 1) % PARTITIONS
    table.data._dbs[wrong].put(key, b"stray")
    assert faust_rocksdb.Store._get(table.data, key) == b"stray"  # searched every DB
    assert seam.read_entry(table, key) is None  # the routed store: the key's partition only
    table.data.close_all()


async def test_fausts_recovery_reads_again_from_the_persisted_offset_itself(
        tmp_path: Path) -> None:
    app, table = make(tmp_path, Producer())
    key = table_entry_key("wf-1")
    await changelog.write(table, [(key, b"v")])
    tp = TP(table.changelog_topic.get_topic_name(), entry_partition(key, PARTITIONS))
    recovery = app.tables.recovery
    recovery.add_active(table, tp)
    sought: list[dict[TP, int]] = []

    class Consumer:
        async def earliest_offsets(self, *tps: TP) -> dict[TP, int]:
            return {t: 0 for t in tps}

        async def seek_wait(self, offsets: dict[TP, int]) -> None:
            sought.append(dict(offsets))

    await recovery._build_offsets(Consumer(), {tp}, recovery.active_offsets, "active")
    await recovery._seek_offsets(Consumer(), {tp}, recovery.active_offsets, "active")
    assert sought == [{tp: 10}]  # offset 10 is read again (not 11): harmless, idempotent
    table.data.close_all()
