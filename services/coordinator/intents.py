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

An intent is carried out again only over the table it was computed on. Each entry
carries a digest of what its key held when the batch was applied (``found``); a slot
whose keys hold neither that nor what the intent writes was left by a process that had
lost the partition (stopped past its session, then resumed and wrote its intent: see
``freeze.py``) while the new owner moved the workflows on. Carrying it out would publish
seqs the new owner has used, with other bodies, and set its states back; such a slot is
refused like an unreadable one (dead-lettered with the reason, then emptied).

An intent is Avro, compressed with zlib (level 1: table entries are JSON and records share
most of their bytes, so it shrinks several times over for a few microseconds a task).
One larger than ``CHUNK_BYTES`` once compressed is split over chunk entries, written
before the intent's head entry, which names their number: the head lands only after every
chunk has (one partition, one producer, in order).
"""

from __future__ import annotations

import hashlib
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

def _schema(entry_value: Any, found: bool = False) -> Any:
    entry_fields: list[dict[str, Any]] = [{"name": "key", "type": "bytes"},
                                          {"name": "value", "type": entry_value}]
    if found:
        entry_fields.append({"name": "found", "type": ["null", "bytes"]})
    return parse_schema({
        "type": "record", "name": "Intent", "namespace": "headwater.coordinator",
        "fields": [
            {"name": "entries", "type": {"type": "array", "items": {
                "type": "record", "name": "Entry", "fields": entry_fields}}},
            {"name": "records", "type": {"type": "array", "items": {
                "type": "record", "name": "Record",
                "fields": [{"name": "topic", "type": "string"},
                           {"name": "key", "type": "bytes"},
                           {"name": "value", "type": "bytes"}]}}},
        ]})


_SCHEMAS = {1: _schema("bytes"), 2: _schema(["null", "bytes"]),
            3: _schema(["null", "bytes"], found=True)}
"""Intent layouts by the head's ``v``: 3 adds each entry's ``found`` digest; 2 lets an
entry's value be null (the entry is deleted: a schedule's ended run); 1 and 2 are read
still, for intents written before (carried out unchecked, as then)."""
_VERSION = 3


def fingerprint(value: bytes | None) -> bytes:
    """What ``found`` holds for a key's value: a 16-byte digest, or b"" for no entry."""
    return b"" if value is None else hashlib.blake2b(value, digest_size=16).digest()


@dataclass
class Intent:
    """One partition's share of a batch: table entries to write, records to publish."""

    entries: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    records: list[Outgoing] = field(default_factory=list)
    found: dict[bytes, bytes] = field(default_factory=dict)
    """Entry key -> ``fingerprint`` of what the key held when the batch was applied (a
    key not named here is not checked: intents of layouts 1 and 2)."""

    def moved_on(self, table: Entries) -> str | None:
        """Why the table no longer holds what this intent was computed on (a key holding
        neither what the batch found nor a value the intent writes), or None."""
        writes: dict[bytes, set[bytes]] = {}
        for key, value in self.entries:
            writes.setdefault(key, set()).add(fingerprint(value))
        for key, found in self.found.items():
            now = fingerprint(table.get_entry(key))
            if now != found and now not in writes.get(key, ()):
                return (f"table entry {key!r} holds neither what the intent's batch found "
                        "nor what it writes: another process owned the partition since "
                        "(an intent written by a process that had lost it)")
        return None


def encode(partition: int, intent: Intent) -> list[tuple[bytes, bytes]]:
    """The table entries that hold ``intent``: its chunks, then its head (write in order)."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _SCHEMAS[_VERSION], {
        "entries": [{"key": k, "value": v, "found": intent.found.get(k)}
                    for k, v in intent.entries],
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
                  [Outgoing(r["topic"], r["key"], r["value"]) for r in doc["records"]],
                  {e["key"]: e["found"] for e in doc["entries"] if e.get("found") is not None})


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
        slots that cannot be carried out: something ``encode`` did not write (corrupt, or
        a chunk missing), or an intent the table has moved past (``Intent.moved_on``)."""
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
                intent = decode(chunks, head_version(head))
            except DecodeError as e:
                unreadable[p] = Unreadable(f"unreadable intent of partition {p}: {e}", head,
                                           chunks)
                continue
            stale = intent.moved_on(self.table)
            if stale is None:
                found[p] = intent
            else:
                unreadable[p] = Unreadable(f"stale intent of partition {p}: {stale}", head,
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
