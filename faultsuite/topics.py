"""Reading whole topics once a run is over: every record up to the end offsets of the
moment, decoded, with undecodable records counted rather than raised (a queue's
dispatches, lanes and all: ``read_dispatches``); and which input records a consumer
group has not committed (``uncommitted``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from headwater import codec
from headwater.errors import DecodeError
from headwater.topics import Topics
from load.kafka_io import reader
from tests.polling import scaled


@dataclass(frozen=True)
class Record:
    """One record of a topic.

    Attributes:
        partition: its partition.
        offset: its offset there.
        key: its key (a workflow id, UTF-8), or ``""``.
        value: the decoded value (None if it could not be decoded).
        raw: the value's bytes.
        headers: its Kafka headers (a dead letter's ``reason``, for one).
    """

    partition: int
    offset: int
    key: str
    value: Any
    raw: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


async def read_all(bootstrap: str, topic: str, timeout_s: float = 120.0) -> list[Record]:
    """Every record of ``topic`` from the beginning to the end offsets at the call
    (``services.common.topic_reader``).

    Returns:
        The records, partition by partition in offset order; an empty list when the
        topic does not exist (nothing was ever written to it).

    Raises:
        TimeoutError: not read within ``timeout_s`` (scaled, see ``tests/polling.py``).
    """
    async with reader(bootstrap, scaled(timeout_s)) as topics:
        found = await topics.partitions(topic, wait_s=scaled(5.0))
        if not found:
            return []
        return [_record(r) for r in await topics.read_to_end(topic, found)]


async def read_dispatches(bootstrap: str, topics: Topics, queue: str,
                          timeout_s: float = 120.0) -> dict[str, list[Record]]:
    """Every dispatch record for the workers of ``queue``: on ``tasks.<queue>`` and on
    each of its lanes (``Topics.lane``: where code runs that recorded a code version
    send their activations and their steps on their own queue), by topic, each read as
    ``read_all`` does.

    Raises:
        TimeoutError: not read within ``timeout_s`` (scaled, see ``tests/polling.py``).
    """
    async with reader(bootstrap, scaled(timeout_s)) as source:
        listed = await asyncio.wait_for(source.admin.list_topics(), scaled(timeout_s))
    names = sorted({topics.tasks(queue)} | {t for t in listed if topics.queue_of(t) == queue})
    return {t: await read_all(bootstrap, t, timeout_s) for t in names}


def _record(r: Any) -> Record:
    raw = r.value or b""
    try:
        value = codec.decode(raw)
    except (DecodeError, ValueError):
        value = None
    return Record(r.partition, r.offset, (r.key or b"").decode(errors="replace"), value, raw,
                  tuple((k, v or b"") for k, v in r.headers or ()))


async def uncommitted(bootstrap: str, group: str, topics: Iterable[str]) -> list[str]:
    """``<topic>[<partition>] committed <c> of <end>`` for every partition of ``topics``
    where ``group`` has not committed up to the end (evidence for a run not idle)."""
    out = []
    async with reader(bootstrap, scaled(60.0)) as source:
        for topic in topics:
            parts = await source.partitions(topic)
            committed = await source.committed(group, topic, parts)
            for p, end in sorted((await source.end_offsets(topic, parts)).items()):
                if committed.get(p, 0) < end:
                    out.append(f"{topic}[{p}] committed {committed.get(p, 'none')} of {end}")
    return out
