"""The intent log: what a batch will write and publish, per partition, written ahead.

A batch's effects are many Kafka records: table entries (on the table's changelog) and
history events, dispatches and stops (on other topics). A crash can land any subset of
them, and an input applied a second time, in another order, may decide differently: the
same seq would then be published twice with different bodies. So each partition's share
of a batch is first written as one ``Intent`` into the table itself, under the
partition's own key, and only then carried out. After a crash the new owner finds the
intent where the changelog restores the table, carries it out again verbatim (readers
dedupe what had landed) and only then reads inputs; the inputs of the batch are skipped by
the workflows' applied offsets. An intent that did not land means nothing of its batch
landed: the inputs come again and are applied to the same snapshots.

An intent is Avro, compressed with zlib (level 1: table entries are JSON and records share
most of their bytes, so it shrinks several times over for a few microseconds a task).
One larger than ``CHUNK_BYTES`` once compressed is split over chunk entries, written
before the intent's head entry, which names their number: the head lands only after every
chunk has (one partition, one producer, in order).
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import fastavro
import orjson
from fastavro.schema import parse_schema

from headwater.errors import DecodeError
from services.coordinator import metrics
from services.coordinator.keys import intent_key
from services.coordinator.records import Outgoing

CHUNK_BYTES = 1 << 20
"""Largest chunk of an encoded intent, bytes: well under the broker's
``message.max.bytes`` (16 MiB in ``infra/kafka.sh``)."""

def _schema(entry_value: Any) -> Any:
    return parse_schema({
        "type": "record", "name": "Intent", "namespace": "headwater.coordinator",
        "fields": [
            {"name": "entries", "type": {"type": "array", "items": {
                "type": "record", "name": "Entry",
                "fields": [{"name": "key", "type": "bytes"},
                           {"name": "value", "type": entry_value}]}}},
            {"name": "records", "type": {"type": "array", "items": {
                "type": "record", "name": "Record",
                "fields": [{"name": "topic", "type": "string"},
                           {"name": "key", "type": "bytes"},
                           {"name": "value", "type": "bytes"}]}}},
        ]})


_SCHEMAS = {1: _schema("bytes"), 2: _schema(["null", "bytes"])}
"""Intent layouts by the head's ``v``: 2 lets an entry's value be null (the entry is
deleted: a schedule's ended run); 1 is read still, for intents written before."""
_VERSION = 2


@dataclass
class Intent:
    """One partition's share of a batch: table entries to write, records to publish."""

    entries: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    records: list[Outgoing] = field(default_factory=list)


def encode(partition: int, intent: Intent) -> list[tuple[bytes, bytes]]:
    """The table entries that hold ``intent``: its chunks, then its head (write in order)."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _SCHEMAS[_VERSION], {
        "entries": [{"key": k, "value": v} for k, v in intent.entries],
        "records": [{"topic": r.topic, "key": r.key, "value": r.value}
                    for r in intent.records]})
    blob = zlib.compress(buf.getvalue(), 1)
    chunks = [blob[i:i + CHUNK_BYTES] for i in range(0, len(blob), CHUNK_BYTES)] or [b""]
    out = [(intent_key(partition, i), chunk) for i, chunk in enumerate(chunks)]
    out.append((intent_key(partition), orjson.dumps({"v": _VERSION, "chunks": len(chunks)})))
    return out


def chunk_count(head: bytes) -> int:
    """How many chunks the head entry ``head`` names.

    Raises:
        DecodeError: not a head written by ``encode``.
    """
    try:
        doc = orjson.loads(head)
        n = doc["chunks"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as e:
        raise DecodeError(f"not an intent head: {e}") from e
    if not isinstance(n, int) or n < 1:
        raise DecodeError(f"an intent head names {n!r} chunks")
    return n


def head_version(head: bytes) -> int:
    """The layout ``v`` a head entry names (1 when it names none).

    Raises:
        DecodeError: not a head written by ``encode``, or a layout unknown here.
    """
    try:
        v = orjson.loads(head).get("v", 1)
    except (orjson.JSONDecodeError, AttributeError) as e:
        raise DecodeError(f"not an intent head: {e}") from e
    if v not in _SCHEMAS:
        raise DecodeError(f"an intent head of layout {v!r}, not one of {sorted(_SCHEMAS)}")
    return int(v)


def decode(chunks: list[bytes], version: int = _VERSION) -> Intent:
    """The intent held by ``chunks`` (in order), of layout ``version`` (``head_version``).

    Raises:
        DecodeError: the chunks do not hold an intent written by ``encode``.
    """
    try:
        raw = zlib.decompress(b"".join(chunks))
        doc = fastavro.schemaless_reader(io.BytesIO(raw), _SCHEMAS[version], None)
    except Exception as e:  # fastavro raises many types on bad input; all mean the same
        raise DecodeError(f"unreadable intent: {type(e).__name__}: {e}") from e
    assert isinstance(doc, dict)
    return Intent([(e["key"], e["value"]) for e in doc["entries"]],
                  [Outgoing(r["topic"], r["key"], r["value"]) for r in doc["records"]])


class Entries(Protocol):
    """Raw access to the table's local store and changelog (``store.TableStore``)."""

    def get_entry(self, key: bytes) -> bytes | None:
        """A raw entry, or None."""

    def write(self, entries: list[tuple[bytes, bytes | None]]) -> list[Awaitable[Any]]:
        """Write entries in order (None deletes); futures resolve once durable."""


class IntentLog:
    """Intents kept in the coordinator's table, one slot per partition."""

    def __init__(self, table: Entries) -> None:
        self.table = table

    def record(self, intents: dict[int, Intent]) -> list[Awaitable[Any]]:
        """Write each partition's intent (chunks, then head); await before carrying out."""
        metrics.INTENTS_PENDING.inc(len(intents))
        return self.table.write([e for p, intent in sorted(intents.items())
                                 for e in encode(p, intent)])

    def pending(self, partitions: Iterable[int],
                ) -> tuple[dict[int, Intent], dict[int, Unreadable]]:
        """The intents left in the slots of ``partitions`` (not yet cleared), and the
        slots that hold something ``encode`` did not write (corrupt, or a chunk missing)."""
        found: dict[int, Intent] = {}
        unreadable: dict[int, Unreadable] = {}
        for p in sorted(partitions):
            head = self.table.get_entry(intent_key(p))
            if head is None:
                continue
            chunks = self._chunks(p, head)
            try:
                if len(chunks) != chunk_count(head):
                    raise DecodeError(f"{len(chunks)} of {chunk_count(head)} chunks found")
                found[p] = decode(chunks, head_version(head))
            except DecodeError as e:
                unreadable[p] = Unreadable(f"unreadable intent of partition {p}: {e}", head,
                                           chunks)
        metrics.INTENTS_PENDING.inc(len(found) + len(unreadable))
        return found, unreadable

    def clear(self, partitions: Iterable[int]) -> list[Awaitable[Any]]:
        """Empty the slots of ``partitions``: the head first, so that a crash half-way
        leaves either the whole intent or none."""
        doomed: list[tuple[bytes, bytes | None]] = []
        for p in sorted(partitions):
            head = self.table.get_entry(intent_key(p))
            if head is None:
                continue
            doomed.append((intent_key(p), None))
            doomed += [(intent_key(p, i), None) for i in range(len(self._chunks(p, head)))]
            metrics.INTENTS_PENDING.dec()
        return self.table.write(doomed)

    def _chunks(self, partition: int, head: bytes) -> list[bytes]:
        """The chunks present in a slot, in order, up to the first missing one (or as many
        as ``head`` names, when it can be read)."""
        try:
            limit = chunk_count(head)
        except DecodeError:
            limit = None
        chunks: list[bytes] = []
        while limit is None or len(chunks) < limit:
            chunk = self.table.get_entry(intent_key(partition, len(chunks)))
            if chunk is None:
                break
            chunks.append(chunk)
        return chunks


@dataclass(frozen=True)
class Unreadable:
    """A slot whose intent cannot be carried out: why, and its raw entries."""

    reason: str
    head: bytes
    chunks: list[bytes]
