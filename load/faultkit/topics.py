"""Reading whole topics once a run is over: every record up to the end offsets of the
moment, decoded, with undecodable records counted rather than raised."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aiokafka import TopicPartition

from headwater import codec
from headwater.errors import DecodeError
from load.kafka_io import consumer, partitions
from tests.waiting import scaled


@dataclass(frozen=True)
class Record:
    """One record of a topic.

    Attributes:
        partition: its partition.
        offset: its offset there.
        key: its key (a workflow id, UTF-8), or ``""``.
        value: the decoded value (None if it could not be decoded).
        raw: the value's bytes.
    """

    partition: int
    offset: int
    key: str
    value: Any
    raw: bytes


async def read_all(bootstrap: str, topic: str, timeout_s: float = 120.0) -> list[Record]:
    """Every record of ``topic`` from the beginning to the end offsets at the call.

    Returns:
        The records, partition by partition in offset order; an empty list when the
        topic does not exist (nothing was ever written to it).

    Raises:
        TimeoutError: not read within ``timeout_s`` (scaled, see ``tests/waiting.py``).
    """
    timeout_s = scaled(timeout_s)
    client = consumer(bootstrap)
    await client.start()
    try:
        try:
            tps = await partitions(client, topic, timeout_s=scaled(5.0))
        except TimeoutError:
            return []
        ends = {tp: end for tp, end in (await client.end_offsets(tps)).items() if end > 0}
        if not ends:
            return []
        client.assign(list(ends))
        await client.seek_to_beginning(*ends)
        out: list[Record] = []
        open_parts: set[TopicPartition] = set(ends)
        deadline = time.monotonic() + timeout_s
        while open_parts:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: {len(open_parts)} partitions unfinished "
                                   f"after {timeout_s:.0f} s ({len(out)} records read)")
            batches = await client.getmany(*open_parts, timeout_ms=200, max_records=10000)
            for tp, batch in batches.items():
                out.extend(_record(r) for r in batch if r.offset < ends[tp])
            for tp in list(open_parts):
                if await client.position(tp) >= ends[tp]:
                    open_parts.discard(tp)
        return out
    finally:
        await client.stop()


def _record(r: Any) -> Record:
    raw = r.value or b""
    try:
        value = codec.decode(raw)
    except (DecodeError, ValueError):
        value = None
    return Record(r.partition, r.offset, (r.key or b"").decode(errors="replace"), value, raw)
