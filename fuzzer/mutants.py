"""Bad Kafka input records: valid ones (``bases``) mutated, each classified before it
is sent by the coordinator's own decoder.

A mutation may leave a record valid (a bit flipped inside a string, an odd value the
schema allows): such a record is not bad, and is not expected on the dead-letter topic.
``classify`` decides with ``services.coordinator.inputs.decode_input`` (and the
partition the record lands on): a record it refuses, or one on another partition than
its workflow's, must be dead-lettered with a reason (docs/architecture.md, invariant 6).
"""

from __future__ import annotations

import dataclasses
import os
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import orjson
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from fuzzer import oddities
from fuzzer.bases import JSON_HEADERS, OTHER_TYPES, Base, Builders
from headwater import codec
from headwater.errors import DecodeError
from headwater.topics import MAX_AT_MS, Topics
from services.common.kafka.client import AVRO_HEADERS
from services.common.partitioning import partition_for
from services.coordinator.homing import movable
from services.coordinator.inputs import decode_input

MiB = 1024 * 1024
CASE_HEADER = "fuzz-case"
"""The header that names a record's case; dead letters keep it."""
CASE_ID_ROOM = 16
"""Characters a case id takes at most (``<round>-<index>``, ``e<index>``)."""
DLQ, APPLIED, EITHER = "dlq", "applied", "either"
"""What a record should become: a dead letter; applied (not dead-lettered, save for a
documented cause such as a conflicting resubmission); or either (a valid record too
large to record its consequences is dead-lettered, docs/specs.md, "When things fail")."""


@dataclass
class Mutant:
    """One record to send.

    Attributes:
        case: its correlation id (the ``CASE_HEADER`` header), unique in the run.
        base: the kind of valid record it was made from (``bases.Builders.kinds``).
        mutation: what was done to it.
        topic: where it goes.
        key: its key.
        value: its value (None: a tombstone; dropped once sent, see ``size``).
        headers: its headers.
        partition: an explicit partition, or None for the key's.
        expect: ``DLQ``, ``APPLIED`` or ``EITHER``.
        why: the decoder's reason for a bad record, or what made it odd.
        size: the value's size, bytes.
    """

    case: str
    base: str
    mutation: str
    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    partition: int | None = None
    expect: str = APPLIED
    why: str = ""
    size: int = 0


Change = tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int | None, str]
"""What a mutation makes of a base: ``(key, value, headers, partition, note)``."""


@dataclass
class Mutator:
    """Mutates valid records for one run.

    Args:
        builders: makes the valid records (and knows the run's workflow ids).
        partitions: the input topics' partition count.
        max_bytes: the largest record the broker takes, bytes (huge records stay below).
    """

    builders: Builders
    partitions: int
    max_bytes: int
    _huge_made: int = 0

    def mutations(self, base: Base) -> dict[str, Callable[[Base, random.Random], Change | None]]:
        """The mutations that apply to ``base``, by name."""
        out: dict[str, Callable[[Base, random.Random], Change | None]] = {
            "truncated": _truncated, "bitflip": _bitflip, "trailing": _trailing,
            "no_magic": _no_magic, "unknown_fingerprint": _unknown_fingerprint,
            "wrong_schema": _wrong_schema, "wrong_type": self._wrong_type, "empty": _empty,
            "tombstone": _tombstone, "wrong_key": _wrong_key, "null_key": self._null_key,
            "wrong_partition": self._wrong_partition, "bad_at_ms": _bad_at_ms,
            "odd_value": _odd_value, "huge": self._huge, "huge_valid": self._huge_valid,
        }
        if base.topic == self.builders.topics.submissions:
            out["wrong_content_type"] = _wrong_content_type
        if base.record is None:  # a JSON submission
            for name in ("unknown_fingerprint", "wrong_schema"):
                del out[name]
            out["json_garbage"] = _json_garbage
        return out

    def mutate(self, base: Base, mutation: str, rng: random.Random, case: str) -> Mutant | None:
        """``base`` changed by ``mutation``, classified; None when the mutation does not
        apply to it (an odd value that would not encode, say)."""
        return self._classified(case, base, mutation, self.mutations(base)[mutation](base, rng))

    def edges(self, rng: random.Random) -> list[Mutant]:
        """Every input kind with every field set to every odd value of its type
        (``oddities.edge_values``), each about a fresh workflow: the caller makes the
        workflow of each control record and report a running target first
        (``bases.TARGET_SPEC``), so that the record is applied."""
        out: list[Mutant] = []
        kinds = self.builders.kinds()
        for name in sorted(kinds):
            base = kinds[name](rng)
            for change in _edge_changes(base, self.builders.fresh_id):
                mutant = self._classified(f"e{len(out)}", base, "edge_value", change)
                if mutant is not None:
                    out.append(mutant)
        return out

    def _classified(self, case: str, base: Base, mutation: str,
                    change: Change | None) -> Mutant | None:
        if change is None:
            return None
        key, value, headers, partition, note = change
        mutant = Mutant(case, base.kind, mutation, base.topic, key, value,
                        [*headers, (CASE_HEADER, case.encode())], partition,
                        size=len(value or b""))
        expect, why = classify(self.builders.topics, self.partitions, mutant)
        mutant.expect = EITHER if mutation == "huge_valid" and expect == APPLIED else expect
        mutant.why = why or note
        return mutant

    def _wrong_type(self, base: Base, rng: random.Random) -> Change:
        wid = base.key.decode()
        others = [b for kind, build in self.builders.kinds().items()
                  if (b := build(rng)).topic != base.topic and kind != base.kind]
        records = [*(b.record for b in others if b.record is not None), *OTHER_TYPES]
        record = rng.choice(records)
        record = dataclasses.replace(record, workflow_id=wid)
        return base.key, codec.encode(record), list(AVRO_HEADERS), None, type(record).__name__

    def _wrong_partition(self, base: Base, rng: random.Random) -> Change:
        home = partition_for(base.key, self.partitions)
        other = (home + rng.randrange(1, self.partitions)) % self.partitions
        return base.key, base.value, base.headers, other, f"partition {other}, not {home}"

    def _null_key(self, base: Base, rng: random.Random) -> Change:
        # An explicit partition: without a key aiokafka picks one with the random module.
        return None, base.value, base.headers, rng.randrange(self.partitions), "null key"

    def _huge(self, base: Base, rng: random.Random) -> Change:
        size = self._huge_size(base, rng, counted=True)
        head = base.value[:codec.HEADER_SIZE] if base.record is not None else b'{"a": "'
        return base.key, head + os.urandom(size - len(head)), base.headers, None, f"{size} B"

    def _huge_valid(self, base: Base, rng: random.Random) -> Change | None:
        if base.record is None:
            size = self._huge_size(base, rng) - 512  # room for the record's other fields
            doc = {**base.doc, "input": "x" * size}
            return base.key, orjson.dumps(doc), base.headers, None, f"input of {size} B"
        field = next((f for f in ("input", "output", "checkpoint", "chunk", "error",
                                  "message", "reason") if hasattr(base.record, f)), None)
        if field is None:
            return None
        size = self._huge_size(base, rng) - 512
        record = dataclasses.replace(base.record, **{field: "x" * size})
        return base.key, codec.encode(record), base.headers, None, f"{field} of {size} B"

    def _huge_size(self, base: Base, rng: random.Random, counted: bool = False) -> int:
        """1 MiB up to as large as the broker takes; the largest every third ``counted``
        time (such a record's dead letter, with a reason and origin headers beside the
        value, would be too large: it goes without its value)."""
        headers = [*base.headers, (CASE_HEADER, b"x" * CASE_ID_ROOM)]
        overhead: int = DefaultRecordBatchBuilder.estimate_size_in_bytes(base.key, b"", headers)
        top = self.max_bytes - overhead - 32
        if counted:
            self._huge_made += 1
            if self._huge_made % 3 == 1:
                return top
        return rng.randrange(MiB, top)


def classify(topics: Topics, partitions: int, m: Mutant) -> tuple[str, str]:
    """What ``m`` should become, and why: ``(DLQ, the decoder's reason)`` when the
    coordinator's decoder refuses it or it lands on another partition than its
    workflow's on a topic whose records are not moved home (reports), else
    ``(APPLIED, "")``. A decoder that raises anything but ``DecodeError`` is a finding
    (the coordinator only catches that): ``(DLQ, "decoder raised ...")`` with the
    traceback."""
    try:
        record = decode_input(topics, m.topic, m.key, m.value, m.headers)
    except DecodeError as e:
        return DLQ, str(e)
    except Exception as e:  # a finding: reported with its traceback
        return DLQ, f"decoder raised {type(e).__name__}: {e}\n{traceback.format_exc()}"
    home = partition_for(record.workflow_id.encode(), partitions)
    if m.partition is not None and m.partition != home and not movable(topics, m.topic):
        return DLQ, f"misplaced: partition {m.partition}, its workflow's is {home}"
    return APPLIED, ""


def _flip(data: bytes, rng: random.Random, bits: int) -> bytes:
    out = bytearray(data)
    for _ in range(bits):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def _truncated(base: Base, rng: random.Random) -> Change:
    cut = rng.randrange(len(base.value))
    return base.key, base.value[:cut], base.headers, None, f"cut at {cut}"


def _bitflip(base: Base, rng: random.Random) -> Change:
    bits = rng.choice((1, 1, 2, 3, 8))
    return base.key, _flip(base.value, rng, bits), base.headers, None, f"{bits} bits"


def _trailing(base: Base, rng: random.Random) -> Change:
    extra = os.urandom(rng.randrange(1, 64))
    return base.key, base.value + extra, base.headers, None, f"{len(extra)} bytes more"


def _no_magic(base: Base, rng: random.Random) -> Change:
    return base.key, os.urandom(rng.randrange(1, 200)), base.headers, None, "random bytes"


def _unknown_fingerprint(base: Base, rng: random.Random) -> Change:
    value = codec.MAGIC + os.urandom(8) + base.value[codec.HEADER_SIZE:]
    return base.key, value, base.headers, None, value[2:codec.HEADER_SIZE].hex()


def _wrong_schema(base: Base, rng: random.Random) -> Change:
    name = rng.choice(sorted(set(codec.RECORD_TYPES) - {type(base.record).__name__}))
    value = codec.fingerprint_header(name) + base.value[codec.HEADER_SIZE:]
    return base.key, value, base.headers, None, f"body under {name}'s fingerprint"


def _empty(base: Base, rng: random.Random) -> Change:
    return base.key, b"", base.headers, None, "empty value"


def _tombstone(base: Base, rng: random.Random) -> Change:
    return base.key, None, base.headers, None, "null value"


def _wrong_key(base: Base, rng: random.Random) -> Change:
    key = rng.choice((base.key + b"x", b"\xff\xfe", b"", _flip(base.key, rng, 1)))
    return key, base.value, base.headers, None, f"key {key!r:.40}"




def _bad_at_ms(base: Base, rng: random.Random) -> Change:
    at_ms = rng.choice((-1, MAX_AT_MS + 1, -(2**63), 2**63 - 1))
    if base.record is None:
        return base.key, orjson.dumps({**base.doc, "at_ms": at_ms}), base.headers, None, \
            f"at_ms={at_ms}"
    value = codec.encode(dataclasses.replace(base.record, at_ms=at_ms))
    return base.key, value, base.headers, None, f"at_ms={at_ms}"


def _odd_value(base: Base, rng: random.Random) -> Change | None:
    if base.record is None:
        doc, note = oddities.odd_document(base.doc, rng)
        try:
            return base.key, orjson.dumps(doc), base.headers, None, note
        except orjson.JSONEncodeError:
            return None
    odd = oddities.odd_record(base.record, rng)
    if odd is None:
        return None
    return base.key, codec.encode(odd[0]), base.headers, None, odd[1]


def _wrong_content_type(base: Base, rng: random.Random) -> Change:
    headers = list(AVRO_HEADERS) if base.record is None else list(JSON_HEADERS)
    return base.key, base.value, headers, None, f"{headers[0][1].decode()} header"


JSON_GARBAGE: tuple[bytes, ...] = (
    b"", b"{", b"null", b"[]", b'"text"', b"1e999", b'{"workflow_id": 5}',
    b'{"workflow_id": "", "spec": {}, "at_ms": 1}', b'{"workflow_id": "w", "at_ms": 1.5}',
    b'{"workflow_id": "w", "at_ms": true, "spec": {}}', b"\xff\xfe{}", b"{\"a\": NaN}",
    b'{"workflow_id": "w", "at_ms": 1}', b'{"workflow_id": "w", "at_ms": 1, "spec": {},'
    b' "tenant": 7}', b"[" * 2000 + b"]" * 2000,
)


def _json_garbage(base: Base, rng: random.Random) -> Change:
    value = rng.choice(JSON_GARBAGE).replace(b'"w"', b'"' + base.key + b'"')
    return base.key, value, base.headers, None, f"{value[:40]!r}"


def _edge_changes(base: Base, fresh: Callable[[], str]) -> list[Change]:
    """The ``edge_value`` changes of ``base``: one per ``(field, odd value)``, each
    about a ``fresh()`` workflow; pairs that do not encode are left out."""
    if base.record is None:
        odd = [(name, value) for name, values in (
            ("spec", oddities.ODD_JSON), ("input", oddities.ODD_JSON),
            ("tenant", oddities.ODD_STRINGS), ("at_ms", oddities.ODD_LONGS))
            for value in values]
        out: list[Change] = []
        for name, value in odd:
            wid = fresh()
            try:
                text = orjson.dumps({**base.doc, "workflow_id": wid, name: value})
            except orjson.JSONEncodeError:  # nested too deep inside the document
                continue
            out.append((wid.encode(), text, base.headers, None, f"{name}={value!r:.40}"))
        return out
    out = []
    for name, value in oddities.edge_values(base.record):
        wid = fresh()
        record = dataclasses.replace(base.record, workflow_id=wid, **{name: value})
        try:
            encoded = codec.encode(record)
        except (ValueError, KeyError):
            continue
        out.append((wid.encode(), encoded, base.headers, None, f"{name}={value!r:.40}"))
    return out
