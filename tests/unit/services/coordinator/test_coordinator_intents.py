"""Intents (``services/coordinator/intents.py``): their table entries, chunks and slots."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import pytest

from headwater.errors import DecodeError
from services.coordinator import intents
from services.coordinator.intents import Intent, IntentLog
from services.coordinator.keys import intent_key, intent_partition, table_entry_key
from services.coordinator.records import Outgoing

INTENT = Intent(entries=[(table_entry_key("wf-1"), b'{"seq": 3}'),
                         (table_entry_key("wf-1", "a"), b"\x00\xff" * 40)],
                records=[Outgoing("p.events", b"wf-1", b"\xc3\x01avro"),
                         Outgoing("p.tasks.cpu", b"wf-1", b"")])


class Entries:
    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.log: list[tuple[bytes, bytes | None]] = []

    def get_entry(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def write(self, entries: list[tuple[bytes, bytes | None]]) -> list[Awaitable[Any]]:
        for key, value in entries:
            self.log.append((key, value))
            if value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = value
        return []


def test_an_intent_survives_its_entries() -> None:
    entries = intents.encode(5, INTENT)
    assert [k for k, _ in entries] == [intent_key(5, 0), intent_key(5)]  # chunks, then the head
    assert intents.chunk_count(entries[-1][1]) == 1
    assert intents.decode([v for _, v in entries[:-1]]) == INTENT


def test_keys_name_their_partition_and_no_workflow_key_is_one() -> None:
    assert intent_partition(intent_key(7)) == 7
    assert intent_partition(intent_key(12, 3)) == 12
    assert intent_partition(table_entry_key("wf-1")) is None
    assert intent_partition(table_entry_key("wal", "7")) is None


def test_a_large_intent_is_chunked_and_read_back_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intents, "CHUNK_BYTES", 64)
    big = Intent(records=[Outgoing("t", b"k", bytes(range(256)) * 4)])
    entries = intents.encode(0, big)
    assert len(entries) > 3 and entries[-1][0] == intent_key(0)
    assert all(len(v) <= 64 for _, v in entries[:-1])
    assert intents.decode([v for _, v in entries[:-1]]) == big


@pytest.mark.parametrize("head", [b"", b"{}", b'{"chunks": 0}', b'{"chunks": "2"}', b"[1]"])
def test_a_malformed_head_is_a_decode_error(head: bytes) -> None:
    with pytest.raises(DecodeError):
        intents.chunk_count(head)


def test_malformed_chunks_are_a_decode_error() -> None:
    with pytest.raises(DecodeError):
        intents.decode([b"not zlib"])


def test_an_intent_log_keeps_one_slot_per_partition_and_clears_head_first() -> None:
    table = Entries()
    intent_log = IntentLog(table)
    intent_log.record({1: INTENT, 4: Intent()})
    assert intent_log.pending([1, 2, 4]) == ({1: INTENT, 4: Intent()}, {})
    table.log.clear()
    intent_log.clear([1])
    assert table.log[0] == (intent_key(1), None)  # a crash half-way leaves no head
    assert intent_log.pending([1, 4]) == ({4: Intent()}, {})
    assert table.data.keys() == {intent_key(4), intent_key(4, 0)}


@pytest.mark.parametrize(("tamper", "why"), [
    (lambda data: data.pop(intent_key(3, 0)), "0 of 1 chunks found"),
    (lambda data: data.update({intent_key(3, 0): b"junk"}), "incorrect header check"),
    (lambda data: data.update({intent_key(3): b"junk"}), "not an intent head"),
])
def test_an_unreadable_slot_is_reported_with_its_raw_entries_and_can_be_cleared(
        tamper: Any, why: str) -> None:
    table = Entries()
    intent_log = IntentLog(table)
    intent_log.record({3: INTENT, 5: INTENT})
    tamper(table.data)
    found, unreadable = intent_log.pending([3, 5])
    assert found == {5: INTENT}
    assert list(unreadable) == [3] and why in unreadable[3].reason
    assert unreadable[3].head == table.data[intent_key(3)]
    intent_log.clear([3])
    assert not any(intent_partition(k) == 3 for k in table.data)


def test_an_intent_carries_deletes_and_one_written_before_them_still_reads() -> None:
    deleting = Intent(entries=[(table_entry_key("wf-1", "fire[3]"), None),
                               (table_entry_key("wf-1"), b'{"seq": 9}')])
    log = IntentLog(Entries())
    log.record({2: deleting, 3: INTENT})
    found, unreadable = log.pending([2, 3])
    assert found == {2: deleting, 3: INTENT} and not unreadable
    old = Entries()  # layout 1: values were never null, and its head names v 1
    buf = intents.io.BytesIO()
    intents.fastavro.schemaless_writer(buf, intents._SCHEMAS[1], {
        "entries": [{"key": k, "value": v} for k, v in INTENT.entries],
        "records": [{"topic": r.topic, "key": r.key, "value": r.value} for r in INTENT.records]})
    old.data[intent_key(4, 0)] = intents.zlib.compress(buf.getvalue())
    old.data[intent_key(4)] = b'{"v": 1, "chunks": 1}'
    assert IntentLog(old).pending([4]) == ({4: INTENT}, {})


def test_a_slot_the_table_moved_past_is_refused_and_one_half_carried_out_is_not() -> None:
    """An intent is carried out again only over the table it was computed on: each key
    holds what the batch found, or what the intent writes (a crash half-way through)."""
    table = Entries()
    header, task = table_entry_key("wf-1"), table_entry_key("wf-1", "a")
    table.data[header] = b'{"seq": 2}'
    intent = Intent(entries=[(header, b'{"seq": 3}'), (task, b"done")], records=INTENT.records,
                    found={header: intents.fingerprint(b'{"seq": 2}'),
                           task: intents.fingerprint(None)})
    log = IntentLog(table)
    log.record({1: intent})
    assert log.pending([1]) == ({1: intent}, {})  # nothing of it landed
    table.data[header] = b'{"seq": 3}'
    assert log.pending([1]) == ({1: intent}, {})  # some of it landed
    table.data[task] = b"done"
    assert log.pending([1]) == ({1: intent}, {})  # all of it landed
    table.data[header] = b'{"seq": 4}'  # the new owner went on from the same state
    found, refused = log.pending([1])
    assert found == {} and list(refused) == [1]
    assert "stale intent of partition 1" in refused[1].reason
    assert repr(header) in refused[1].reason
    table.data[header] = b'{"seq": 2}'
    table.data.pop(task)
    table.data[task] = b"other"  # a key the batch found empty, written by another owner
    assert list(log.pending([1])[1]) == [1]


def test_found_digests_survive_the_slot_and_older_layouts_carry_none() -> None:
    intent = Intent(entries=INTENT.entries, found={INTENT.entries[0][0]: b"\x01" * 16})
    assert intents.decode([v for _, v in intents.encode(0, intent)[:-1]]) == intent
    buf = intents.io.BytesIO()
    intents.fastavro.schemaless_writer(buf, intents._SCHEMAS[2], {
        "entries": [{"key": k, "value": v} for k, v in INTENT.entries], "records": []})
    old = intents.decode([intents.zlib.compress(buf.getvalue())], 2)
    assert old.found == {} and old.moved_on(Entries()) is None
