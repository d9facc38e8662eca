"""The RocksDB store reads its new partitions' changelog itself (``restore.read_changelog``)
past each DB's stored offset, into the DB, and stores the offset it reached: faust's
recovery then reads on from there (a partition that is new to this process no longer
goes through faust's record-at-a-time restore)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from faust.types import TP
from test_coordinator_restore import Reader, key_on
from test_coordinator_rocks_store import Producer, make

from services.coordinator.faust_seam import app as seam


def _tps(table: Any, *partitions: int) -> set[TP]:
    return {TP(table.changelog_topic.get_topic_name(), p) for p in partitions}


async def _rebalance(table: Any, reader: Reader | None, *partitions: int) -> None:
    table.data.reader = (lambda: reader) if reader is not None else None
    table.app.assignor._assignment.standbys = {}
    tps = _tps(table, *partitions)
    await table.data.on_rebalance(tps, set(), tps)


async def test_an_empty_partition_db_is_read_from_the_log_start(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    a, b = key_on(1, 0), key_on(1, 1)
    reader = Reader({1: [(a, b"a1"), (b, b"b1"), (a, b"a2"), (b, None)]})
    await _rebalance(table, reader, 1)
    assert seam.read_entry(table, a) == b"a2"
    assert seam.read_entry(table, b) is None  # the tombstone deleted it
    assert table.data.persisted_offset(_tps(table, 1).pop()) == 3
    assert [start for _, start, _ in reader.reads] == [{1: 0}]
    table.data.close_all()


async def test_a_partition_db_with_an_offset_reads_only_past_it(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    a = key_on(2, 0)
    (tp,) = _tps(table, 2)
    table.data.set_persisted_offset(tp, 1)
    reader = Reader({2: [(a, b"a1"), (a, b"a2"), (a, b"a3")]})
    await _rebalance(table, reader, 2)
    assert [start for _, start, _ in reader.reads] == [{2: 2}]
    assert seam.read_entry(table, a) == b"a3"
    assert table.data.persisted_offset(tp) == 2
    # nothing past it: the offset and the entry stay
    again = Reader({2: [(a, b"a1"), (a, b"a2"), (a, b"a3")]})
    await _rebalance(table, again, 2)
    assert table.data.persisted_offset(tp) == 2
    assert seam.read_entry(table, a) == b"a3"
    table.data.close_all()


async def test_a_compacted_start_is_read_from_the_log_start(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    a = key_on(3, 0)
    reader = Reader({3: [(a, b"gone"), (a, b"a2"), (a, b"a3")]}, begin=1)
    await _rebalance(table, reader, 3)
    assert [start for _, start, _ in reader.reads] == [{3: 1}]
    assert seam.read_entry(table, a) == b"a3"
    table.data.close_all()


async def test_a_failed_read_leaves_the_stored_offset_for_faust(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    a, c = key_on(0, 0), key_on(1, 0)
    tp0, tp1 = sorted(_tps(table, 0, 1))
    table.data.set_persisted_offset(tp1, 0)
    reader = Reader({0: [(a, b"a1")], 1: [(c, b"c1"), (c, b"c2")]}, fail_after=1)
    await _rebalance(table, reader, 0, 1)  # partition 0 read, then the broker went away
    assert table.data.persisted_offset(tp0) is None  # faust reads it whole
    assert table.data.persisted_offset(tp1) == 0  # and this one on from where it was
    table.data.close_all()


async def test_without_a_reader_faust_restores(tmp_path: Path) -> None:
    _, table = make(tmp_path, Producer())
    await _rebalance(table, None, 1)
    assert table.data.persisted_offset(_tps(table, 1).pop()) is None
    table.data.close_all()
