"""Table writes: entries to the faust table's local store and to its changelog topic,
straight through the app's aiokafka producer.

``table[key] = value`` would drop the changelog record's future (nothing to await before
the inputs are committed) and take its partition from the current event (it raises
outside a stream). ``table.send_changelog`` goes through faust's producer buffer, which
a background task drains into aiokafka; records reaching aiokafka's accumulator in
several turns of the event loop can leave in several requests, and aiokafka keeps one
request in flight per broker (``Sender``: ``ignore_nodes=self._in_flight``), so each
waits for the last one's answer. Sent here in one go, without yielding to the loop, a
batch's entries leave together. Under B2's load on a shared 2-core machine a batch's
carry-out (entries and records) took 41 ms on average through faust's buffer and 20 ms
this way.

faust's own path also records each partition's highest changelog offset in the store
(``Store.set_persisted_offset``, which a persistent store uses at start to read only the
changelog's tail); ``write`` does the same once the broker has the records.

A persistent store (``rocksdb://``: ``faust_seam.rocks``) is written behind the
changelog instead: ``stage`` makes the entries visible to reads at once, and ``settle``
writes them with their offsets once the broker has every record, so that its local copy
only ever holds a prefix of the changelog.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from faust.types import TP


def write(table: Any, entries: list[tuple[bytes, bytes | None]]) -> Awaitable[None]:
    """Write entries in order (a None value deletes) to the table's local store now, and
    to its changelog (each to ``table.partition_for_key(key)``).

    Args:
        table: the faust table (``faust_seam.WorkflowTable``).
        entries: ``(key, value)`` pairs; for one key, the last one wins.

    Returns:
        A future, already running, that resolves once the broker has every record (raises
        what the producer raised). Await it before the inputs are committed.
    """
    stage = getattr(table.data, "stage", None)
    if stage is not None:  # a persistent store: written once the broker has them all
        return asyncio.ensure_future(_send(table, entries, stage(entries)))
    for key, value in entries:
        if value is None:
            table.data.pop(key, None)
        else:
            table.data[key] = kept(value)
    return asyncio.ensure_future(_send(table, entries))


def kept(value: bytes) -> bytes:
    """``value`` as the memory store keeps it: a copy the size of its content.

    ``orjson.dumps`` (3.13) returns bytes whose allocation stays that of its 4 KiB
    starting buffer: a 300-byte header held 4 KiB. Kept in the table, that was most of a
    coordinator's memory (100,000 small values: 393 MiB, copied: 35 MiB), and a restart,
    whose values come from the changelog's records, held a third of it."""
    return bytes(memoryview(value))


async def _send(table: Any, entries: list[tuple[bytes, bytes | None]],
                group: int | None = None) -> None:
    topic: str = table.changelog_topic.get_topic_name()
    send = table.app.producer.send
    futures = [await send(topic, key, value, table.partition_for_key(key), None, None)
               for key, value in entries]
    highest: dict[int, int] = {}
    for metadata in await asyncio.gather(*futures):
        highest[metadata.partition] = max(metadata.offset, highest.get(metadata.partition, -1))
    if group is not None:
        table.data.settle(group, highest)
        return
    for partition, offset in highest.items():
        table.data.set_persisted_offset(TP(topic, partition), offset)
