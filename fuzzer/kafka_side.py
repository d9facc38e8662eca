"""Sending the mutated records and matching them with their dead letters.

Each record carries a ``fuzz-case`` header; the coordinator keeps a dead record's
headers and adds ``reason`` and its origin (``services/coordinator/bus.py``), so every
dead letter names the case it came from. Values are not kept once sent: a digest of
each, and of each dead letter's value, is compared instead (huge records are up to
16 MiB).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaProducer

from fuzzer.mutants import CASE_HEADER, DLQ, Mutant
from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER, VALUE_OMITTED_HEADER
from load.kafka_io import reader

SEND_CHUNK = 200
"""Records in flight at once when sending."""


def digest(value: bytes | None) -> str:
    """A short digest of a record value (``"none"`` for a tombstone)."""
    return "none" if value is None else hashlib.blake2b(value, digest_size=12).hexdigest()


@dataclass
class Sent:
    """What was sent of one mutant, its value dropped.

    Attributes:
        mutant: the mutant (``value`` set to None once sent).
        digest: ``digest`` of the value sent.
        refused: the producer's or broker's error when the record was not stored.
    """

    mutant: Mutant
    digest: str
    refused: str = ""


async def send(bootstrap: str, mutants: Sequence[Mutant], max_bytes: int) -> list[Sent]:
    """Produce ``mutants`` (``acks=all``), ``SEND_CHUNK`` at a time; drop their values.

    Args:
        bootstrap: the Kafka bootstrap servers.
        mutants: the records.
        max_bytes: the producer's ``max_request_size``, bytes.

    Returns:
        One ``Sent`` per mutant, in order; a record the producer or broker refused says
        why in ``refused`` (it is not expected anywhere).
    """
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                max_request_size=max_bytes, request_timeout_ms=60_000)
    await producer.start()
    out: list[Sent] = []
    try:
        for i in range(0, len(mutants), SEND_CHUNK):
            chunk = mutants[i:i + SEND_CHUNK]
            futures = [await _send_one(producer, m) for m in chunk]
            results = await asyncio.gather(*futures, return_exceptions=True)
            for m, result in zip(chunk, results, strict=True):
                error = f"{type(result).__name__}: {result}" if isinstance(
                    result, BaseException) else ""
                out.append(Sent(m, digest(m.value), error))
                m.value = None
    finally:
        await producer.stop()
    return out


async def _send_one(producer: AIOKafkaProducer, m: Mutant) -> Any:
    try:
        return await producer.send(m.topic, m.value, key=m.key, partition=m.partition,
                                   headers=m.headers)
    except Exception as e:  # refused before sending (too large): a resolved future
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_exception(e)
        return future


@dataclass
class DeadLetter:
    """One record of the dead-letter topic.

    Attributes:
        case: its ``fuzz-case`` header (``""``: not a fuzz record).
        reason: its ``reason`` header.
        source: its ``source-topic`` header.
        digest: ``digest`` of its value.
        omitted: its ``value-omitted`` header (the value was too large to keep).
    """

    case: str
    reason: str
    source: str
    digest: str
    omitted: str


async def read_dead_letters(bootstrap: str, topic: str, timeout_s: float) -> list[DeadLetter]:
    """Every record of the dead-letter ``topic`` up to its end offsets now.

    Raises:
        TimeoutError: not read within ``timeout_s``.
    """
    out: list[DeadLetter] = []
    async with reader(bootstrap, timeout_s) as source:
        partitions = await source.partitions(topic, wait_s=5.0)
        if not partitions:
            return out
        start = await source.beginning_offsets(topic, partitions)
        stop = await source.end_offsets(topic, partitions)
        async for batch in source.batches(topic, start, stop):
            for r in batch:
                headers = {k: v.decode(errors="replace") for k, v in r.headers}
                out.append(DeadLetter(headers.get(CASE_HEADER, ""),
                                      headers.get(REASON_HEADER, ""),
                                      headers.get(SOURCE_TOPIC_HEADER, ""), digest(r.value),
                                      headers.get(VALUE_OMITTED_HEADER, "")))
    return out


@dataclass
class Matched:
    """The dead letters compared with what was sent (the figures of the Kafka side).

    Attributes:
        expected: bad records sent (the decoder refused them, or they were misplaced).
        dead_lettered: of those, how many have a dead letter with a reason.
        missing: bad records with no dead letter: ``case base/mutation: why``.
        without_reason: dead letters of fuzz records with an empty reason.
        value_changed: dead letters whose value differs from what was sent (and does
            not say it was omitted).
        duplicates: cases dead-lettered more than once.
        valid_dead_lettered: records the decoder took that were dead-lettered anyway,
            by reason (cut to 80 characters): documented causes, or findings.
        other: dead letters of records this run did not make, by reason.
        omitted: dead letters sent without their value (too large with the headers).
        step_raised: dead letters of inputs whose step raised (``cannot apply``), other
            than for the record's limits (``LIMIT_REASONS``): ``case: reason``.
    """

    expected: int = 0
    dead_lettered: int = 0
    missing: list[str] = field(default_factory=list)
    without_reason: list[str] = field(default_factory=list)
    value_changed: list[str] = field(default_factory=list)
    duplicates: int = 0
    valid_dead_lettered: Counter[str] = field(default_factory=Counter)
    other: Counter[str] = field(default_factory=Counter)
    omitted: int = 0
    step_raised: list[str] = field(default_factory=list)


LIMIT_REASONS = ("exceeds the limit of", "JSON nested deeper than")
"""In the reason of an input whose consequences would not fit a record: too large
(``HEADWATER_MAX_MESSAGE_BYTES``) or nested too deep (``codec.MAX_JSON_DEPTH``). The
docs/specs.md documents it ("When things fail"): the workflow fails with the reason."""


def match(sent: Sequence[Sent], dead: Sequence[DeadLetter]) -> Matched:
    """Match every sent record with its dead letters (by ``fuzz-case``)."""
    by_case: dict[str, list[DeadLetter]] = {}
    out = Matched()
    for d in dead:
        if d.reason.startswith("cannot apply") and not any(r in d.reason for r in LIMIT_REASONS):
            out.step_raised.append(f"{d.case or '(not a fuzz record)'}: {d.reason[:300]}")
        if d.case:
            by_case.setdefault(d.case, []).append(d)
        else:
            out.other[d.reason[:80]] += 1
    for s in sent:
        m, letters = s.mutant, by_case.get(s.mutant.case, [])
        out.duplicates += len(letters) > 1
        out.omitted += sum(1 for d in letters if d.omitted)
        out.without_reason += [f"{m.case} {m.base}/{m.mutation}" for d in letters
                               if not d.reason.strip()]
        out.value_changed += [f"{m.case} {m.base}/{m.mutation}" for d in letters
                              if not d.omitted and d.digest != s.digest]
        if s.refused:
            continue
        if m.expect == DLQ:
            out.expected += 1
            if any(d.reason.strip() for d in letters):
                out.dead_lettered += 1
            else:
                out.missing.append(f"{m.case} {m.base}/{m.mutation} on {m.topic}: "
                                   f"{m.why[:200]}")
        elif letters:
            out.valid_dead_lettered[letters[0].reason[:80]] += 1
    return out
