"""B1, the raw baseline: a plain aiokafka producer (``acks=all``) to a fresh topic and a
consumer of it, on the same broker, with records the size of Headwater's.

(a) round trips one at a time: produce one record, wait until the consumer has it;
(b) pipelined: produce N as fast as possible while consuming; rate = N / elapsed.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from headwater import codec
from headwater.core import events as ev
from headwater.topics import AVRO_CONTENT_TYPE, CONTENT_TYPE_HEADER
from load import stats
from load.kafka_io import consumer, delete_topic, fresh_topic, producer
from load.metrics import Basis, Metric
from ops.sandbox import bootstrap
from services.common.clock import now_ms

# The header every Headwater producer sends (``services.common.kafka.AVRO_HEADERS``).
HEADERS = [(CONTENT_TYPE_HEADER, AVRO_CONTENT_TYPE.encode())]

NAME = "B1"
TITLE = "raw Kafka baseline"
METRICS = (
    Metric("record_bytes", "record size (key + value), as a dispatch's history record",
           "bytes", Basis.RECORD_BYTES),
    Metric("rtt_p50_ms", "round trip produce → consume, one at a time, p50", "ms", Basis.RTT),
    Metric("rtt_p95_ms", "round trip, p95", "ms", Basis.RTT),
    Metric("rtt_p99_ms", "round trip, p99", "ms", Basis.RTT),
    Metric("pipelined_per_s", "pipelined round trips per second", "/s", Basis.RATE),
)


@dataclass(frozen=True)
class Sizes:
    """How much B1 does.

    Attributes:
        round_trips: sequential round trips timed (after ``warm_up`` untimed ones).
        pipelined: records in the pipelined run.
        warm_up: untimed round trips first.
    """

    round_trips: int
    pipelined: int
    warm_up: int = 20


def sample_record() -> tuple[bytes, bytes]:
    """A key and value like Headwater's: the history record of a dispatch (a gateway-style
    workflow id, ``HistoryEvent(TaskDispatched)``), 140 to 150 bytes."""
    wid = f"wf-{uuid.uuid4().hex}"
    body = ev.TaskDispatched(wid, "n1", None, 1, "bench.noop", "cpu", {}, now_ms())
    return wid.encode(), codec.encode(ev.HistoryEvent(wid, 5, body))


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS

def run(sizes: Sizes) -> dict[str, float]:
    """Run B1 on a fresh single-partition topic (deleted afterwards).

    Returns:
        The values of ``METRICS``.
    """
    topic = f"bench-raw-{uuid.uuid4().hex[:10]}"
    asyncio.run(fresh_topic(bootstrap(), topic))
    try:
        return asyncio.run(_measure(topic, sizes))
    finally:
        asyncio.run(delete_topic(bootstrap(), topic))


async def _measure(topic: str, sizes: Sizes) -> dict[str, float]:
    key, value = sample_record()
    send = producer(bootstrap())
    recv = consumer(bootstrap())
    await send.start()
    await recv.start()
    try:
        tp = TopicPartition(topic, 0)
        recv.assign([tp])
        await recv.seek_to_end(tp)
        await recv.position(tp)
        rtts = await _round_trips(send, recv, topic, key, value, sizes)
        rate = await _pipelined(send, recv, topic, (key, value), sizes.pipelined)
    finally:
        await send.stop()
        await recv.stop()
    return {"record_bytes": float(len(key) + len(value)),
            **stats.summary("rtt", rtts), "pipelined_per_s": rate}


async def _round_trips(send: AIOKafkaProducer, recv: AIOKafkaConsumer, topic: str,
                       key: bytes, value: bytes, sizes: Sizes) -> list[float]:
    """Milliseconds from ``send`` until the consumer holds the record, one at a time."""
    samples: list[float] = []
    for i in range(sizes.warm_up + sizes.round_trips):
        start = time.perf_counter()
        await send.send_and_wait(topic, value, key=key, headers=HEADERS)
        got = 0
        deadline = start + 10
        while not got:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"round trip {i} not consumed within 10 s")
            batches = await recv.getmany(timeout_ms=1000)
            got = sum(len(b) for b in batches.values())
        if i >= sizes.warm_up:
            samples.append((time.perf_counter() - start) * 1000)
    return samples


async def _pipelined(send: AIOKafkaProducer, recv: AIOKafkaConsumer, topic: str,
                     record: tuple[bytes, bytes], count: int, timeout_s: float = 120.0) -> float:
    """Produce ``count`` copies of ``record`` (key, value) without waiting in between while
    consuming them; return records per second from the first send to the last consumed."""
    key, value = record
    received = 0

    async def drain() -> None:
        nonlocal received
        while received < count:
            batches = await recv.getmany(timeout_ms=200, max_records=10000)
            received += sum(len(b) for b in batches.values())

    start = time.perf_counter()
    reader = asyncio.create_task(drain())
    acks = [await send.send(topic, value, key=key, headers=HEADERS) for _ in range(count)]
    await asyncio.gather(*acks)
    await asyncio.wait_for(reader, timeout_s)
    return count / (time.perf_counter() - start)
