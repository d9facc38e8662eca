"""The memory store that restores its new partitions itself (``faust_seam.restore``), no
broker: the reader is a stand-in holding each changelog partition's records. What it
puts in the store must be what faust's own recovery would (the last record of a key
wins, a tombstone deletes), and the offset it gives faust the last one it read."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from types import SimpleNamespace, TracebackType
from typing import Any

import faust
import pytest
from faust.types import TP

from services.coordinator.faust_seam import app as seam
from services.coordinator.faust_seam.restore import RestoringMemoryStore
from services.coordinator.keys import entry_partition
from services.coordinator.settings import Settings

PARTITIONS = 4


def key_on(partition: int, n: int) -> bytes:
    """The ``n``-th table key (from 0) whose entry lives on ``partition``."""
    found = [k for k in (f"wf-{i}".encode() for i in range(1000))
             if entry_partition(k, PARTITIONS) == partition]
    return found[n]


class Reader:
    """A ``TopicReader`` stand-in: ``log`` is partition -> [(key, value)], starting at
    ``begin`` (records below it compacted or deleted); fails after ``fail_after``
    batches when set."""

    def __init__(self, log: dict[int, list[tuple[bytes, bytes | None]]], begin: int = 0,
                 fail_after: int | None = None) -> None:
        self.log, self.begin, self.fail_after = log, begin, fail_after
        self.reads: list[tuple[str, dict[int, int], dict[int, int]]] = []

    async def __aenter__(self) -> Reader:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    async def beginning_offsets(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return {p: min(self.begin, len(self.log.get(p, []))) for p in partitions}

    async def end_offsets(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return {p: len(self.log.get(p, [])) for p in partitions}

    async def batches(self, topic: str, start: dict[int, int],
                      stop: dict[int, int]) -> AsyncIterator[list[Any]]:
        self.reads.append((topic, start, stop))
        for n, p in enumerate(sorted(stop)):
            if self.fail_after is not None and n >= self.fail_after:
                raise ConnectionError("broker gone")
            yield [SimpleNamespace(key=k, value=v, partition=p, offset=o)
                   for o, (k, v) in enumerate(self.log.get(p, [])) if o >= start[p]]


@pytest.fixture
async def table() -> Any:
    """A coordinator's table on the memory store, never started."""
    app = seam.build_app(dataclasses.replace(Settings.from_env(), store="memory://"), 10.0)
    table = seam.add_table(app, "workflows", PARTITIONS)
    return table


def store_of(table: Any, reader: Reader | None) -> RestoringMemoryStore:
    table.changelog_reader = (lambda: reader) if reader is not None else None
    store = table.data
    assert isinstance(store, RestoringMemoryStore)
    return store


def changelog_tps(table: Any, *partitions: int) -> set[TP]:
    return {TP(table.changelog_topic.get_topic_name(), p) for p in partitions}


async def test_a_restore_keeps_the_last_record_of_each_key_and_drops_tombstones(
        table: Any) -> None:
    a, b, c = key_on(1, 0), key_on(1, 1), key_on(1, 2)
    reader = Reader({1: [(a, b"a1"), (b, b"b1"), (a, b"a2"), (b, None), (c, b"c1"),
                         (c, None), (c, b"c2")]})
    store = store_of(table, reader)
    tps = changelog_tps(table, 1)
    await store.on_rebalance(tps, set(), tps)
    assert dict(store.data) == {a: b"a2", c: b"c2"}
    assert store.persisted_offset(next(iter(tps))) == 6  # the last record read


async def test_only_newly_assigned_changelog_partitions_are_read(table: Any) -> None:
    reader = Reader({0: [(key_on(0, 0), b"x")], 2: [(key_on(2, 0), b"y")], 3: []})
    store = store_of(table, reader)
    held, new = changelog_tps(table, 0), changelog_tps(table, 2, 3)
    other = {TP("inputs", 2)}
    await store.on_rebalance(held | new | other, set(), new | other)
    assert [stop for _, _, stop in reader.reads] == [{2: 1, 3: 0}]
    assert dict(store.data) == {key_on(2, 0): b"y"}
    [tp2], [tp3] = changelog_tps(table, 2), changelog_tps(table, 3)
    assert store.persisted_offset(tp2) == 0
    assert store.persisted_offset(tp3) is None  # empty: faust finds nothing either
    assert store.persisted_offset(next(iter(held))) is None  # faust keeps its own


async def test_the_offsets_hold_for_the_rebalance_that_read_them_only(table: Any) -> None:
    store = store_of(table, Reader({1: [(key_on(1, 0), b"x")]}))
    tps = changelog_tps(table, 1)
    await store.on_rebalance(tps, set(), tps)
    await store.on_rebalance(tps, set(), set())  # held on: faust's offset goes on
    assert store.persisted_offset(next(iter(tps))) is None


async def test_a_partition_assigned_again_is_read_again_from_empty(table: Any) -> None:
    kept, gone, written = key_on(1, 0), key_on(1, 1), key_on(1, 2)
    elsewhere = key_on(2, 0)
    store = store_of(table, Reader({1: [(kept, b"k")]}))
    store.data.update({gone: b"stale", written: b"w", elsewhere: b"e"})
    tps = changelog_tps(table, 1)
    await store.on_rebalance(tps, set(), tps)
    assert dict(store.data) == {kept: b"k", elsewhere: b"e"}


async def test_a_compacted_start_is_read_from_the_log_start(table: Any) -> None:
    a, b = key_on(3, 0), key_on(3, 1)
    reader = Reader({3: [(a, b"gone"), (a, b"a"), (b, b"b")]}, begin=1)
    store = store_of(table, reader)
    tps = changelog_tps(table, 3)
    await store.on_rebalance(tps, set(), tps)
    assert reader.reads[0][1] == {3: 1}
    assert dict(store.data) == {a: b"a", b: b"b"}
    assert store.persisted_offset(next(iter(tps))) == 2


async def test_a_failed_restore_leaves_the_partitions_to_faust(
        table: Any, caplog: pytest.LogCaptureFixture) -> None:
    reader = Reader({0: [(key_on(0, 0), b"x")], 1: [(key_on(1, 0), b"y")]}, fail_after=1)
    store = store_of(table, reader)
    tps = changelog_tps(table, 0, 1)
    await store.on_rebalance(tps, set(), tps)
    assert dict(store.data) == {}  # nothing half read
    assert all(store.persisted_offset(tp) is None for tp in tps)
    assert "faust reads them" in caplog.text


async def test_without_a_reader_faust_restores(table: Any) -> None:
    store = store_of(table, None)
    tps = changelog_tps(table, 1)
    await store.on_rebalance(tps, set(), tps)
    assert store.persisted_offset(next(iter(tps))) is None


async def test_faust_reads_on_after_the_restored_offset(table: Any) -> None:
    """faust's recovery takes the store's offset as the last record applied: a partition
    restored to its high watermark needs no recovery."""
    store = store_of(table, Reader({1: [(key_on(1, 0), b"x"), (key_on(1, 1), b"y")]}))
    tps = changelog_tps(table, 1)
    await store.on_rebalance(tps, set(), tps)
    recovery = table.app.tables.recovery
    [tp] = tps
    recovery.add_active(table, tp)
    recovery.active_highwaters[tp] = 1  # faust's highwater: the end offset minus one
    assert recovery.active_offsets[tp] == 1
    assert not recovery.need_recovery()


def test_the_store_is_fausts_memory_store() -> None:
    assert issubclass(RestoringMemoryStore, faust.stores.memory.Store)
