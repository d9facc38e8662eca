"""Submissions from another Kafka client: confluent-kafka (librdkafka) with its default
settings partitions keys by crc32 (``partitioner=consistent_random``), not murmur2, so
most records land on another partition than their workflow's. The coordinator moves them
home (``services/coordinator/homing.py``): every run succeeds and none is dead-lettered."""

from __future__ import annotations

import os
import re
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from stackkit import BOOTSTRAP, HERE, TASKS, Stack, read_topic
from test_kafka_submission import wait_status

from ops.sandbox import home_kept, start_sandbox, stop_sandbox
from services.common.partitioning import partition_for
from services.common.settings import DEFAULT_MAX_MESSAGE_BYTES
from services.common.topic_reader import TopicReader
from services.coordinator.faust_seam.app import record_bytes
from tests.polling import scaled, wait_until

SPEC = {"name": "foreign", "nodes": [{"id": "a", "task": "e2e.sleep",
                                      "input": {"seconds": 0.01}}]}
RUNS = 6


@pytest.fixture(scope="module")
def chatty(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack whose coordinator logs at its default level (WARNING, at which
    each move's line is written)."""
    home: Path = tmp_path_factory.mktemp("foreign")
    with home_kept():
        stack = start_sandbox(home, TASKS, 1, pythonpath=[str(HERE)])
    try:
        yield stack
    finally:
        with home_kept():
            os.environ["HEADWATER_HOME"] = str(home)
            stop_sandbox(stack)


def misplaced_ids(partitions: int, count: int, wanted: int) -> list[str]:
    """``count`` new workflow ids, of which ``wanted`` have crc32 and murmur2 partitions
    that differ (the rest agree), so that the test moves a known number of records."""
    moved: list[str] = []
    home: list[str] = []
    while len(moved) < wanted or len(home) < count - wanted:
        wid = f"foreign-{uuid.uuid4().hex[:10]}"
        differs = zlib.crc32(wid.encode()) % partitions != partition_for(wid.encode(), partitions)
        (moved if differs else home).append(wid)
    return moved[:wanted] + home[:count - wanted]


def produce_with_librdkafka(topic: str, records: list[tuple[str, bytes]]) -> dict[str, int]:
    """Produce JSON submissions with confluent-kafka's defaults; the partition of each key
    as the broker acknowledged it."""
    delivered: dict[str, int] = {}
    errors: list[Any] = []

    def on_delivery(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(error)
        else:
            delivered[message.key().decode()] = message.partition()

    producer = Producer({"bootstrap.servers": BOOTSTRAP})
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=value, on_delivery=on_delivery,
                         headers=[("content-type", b"application/json")])
    assert producer.flush(scaled(30)) == 0 and errors == [], errors
    return delivered


async def test_confluent_kafka_submissions_are_moved_home_and_all_succeed(chatty: Stack,
                                                                        ) -> None:
    stack = chatty
    topic = stack.topics.submissions
    async with TopicReader(BOOTSTRAP) as reader:
        partitions = len(await reader.partitions(topic, wait_s=scaled(10)))
    assert partitions > 1, "with one partition every client agrees"
    ids = misplaced_ids(partitions, RUNS, 4)
    now = int(time.time() * 1000)
    delivered = produce_with_librdkafka(topic, [
        (wid, orjson.dumps({"workflow_id": wid, "spec": SPEC, "input": {}, "at_ms": now}))
        for wid in ids])
    elsewhere = {wid: p for wid, p in delivered.items()
                 if p != partition_for(wid.encode(), partitions)}
    assert sorted(elsewhere) == sorted(ids[:4]), (delivered, "librdkafka is not crc32?")

    for wid in ids:
        status = await wait_status(stack, wid)
        assert status["status"] == "succeeded", status

    moved = await read_topic(topic, lambda rs: len(_moved(rs, ids)) >= 4, scaled(30),
                             decode=False)
    for record in _moved(moved, ids):
        wid = record.key.decode()
        assert record.partition == partition_for(record.key, partitions)
        assert dict(record.headers)["moved-from"].decode().startswith(
            f"{topic}/{elsewhere[wid]}/")
    async with TopicReader(BOOTSTRAP) as reader:
        dead = await reader.read_to_end(stack.topics.dlq,
                                        keep=lambda key: key is not None and key.decode() in ids)
    assert dead == [], [dict(d.headers).get("reason") for d in dead]

    log = stack.home / "logs" / "coordinator.log"
    lines = wait_until(lambda: _move_lines(log.read_text(), ids), 10,
                       "a log line per move", until=lambda found: len(found) == 4)
    assert {wid for wid, _, _ in lines} == set(ids[:4])
    assert all(src == elsewhere[wid] and dst == partition_for(wid.encode(), partitions)
               for wid, src, dst in lines)
    total = max(int(n) for n in re.findall(r"\((\d+) records moved so far\)", log.read_text()))
    assert total == 4, "the coordinator's count of moves"


def _moved(records: list[Any], ids: list[str]) -> list[Any]:
    """The records among ``records`` that the coordinator moved, of workflows ``ids``."""
    return [r for r in records if r.key is not None and r.key.decode() in ids
            and "moved-from" in dict(r.headers)]


def _move_lines(log: str, ids: list[str]) -> list[tuple[str, int, int]]:
    """``(workflow id, from, to)`` of the coordinator's move lines about ``ids``."""
    found = re.findall(r"moved \S+ \(key '([^']+)'\) from partition (\d+) to its home "
                       r"partition (\d+)", log)
    return [(wid, int(a), int(b)) for wid, a, b in found if wid in ids]


async def test_a_move_that_would_not_fit_is_dead_lettered_and_the_rest_go_on(chatty: Stack,
                                                                           ) -> None:
    """A submission just under the size limit, on another partition than its home: with
    the ``moved-from`` header it would not fit, so it is dead-lettered with the reason
    (the producer would refuse it and fail the batch, restart after restart); a
    submission moved after it succeeds."""
    stack = chatty
    topic = stack.topics.submissions
    async with TopicReader(BOOTSTRAP) as reader:
        partitions = len(await reader.partitions(topic, wait_s=scaled(10)))
    big_id, after_id = misplaced_ids(partitions, 2, 2)
    now = int(time.time() * 1000)
    headers = [("content-type", b"application/json")]

    def submission(wid: str, pad: int) -> bytes:
        return orjson.dumps({"workflow_id": wid, "spec": SPEC, "input": {"pad": "x" * pad},
                             "at_ms": now})

    limit = DEFAULT_MAX_MESSAGE_BYTES
    base = record_bytes(big_id.encode(), submission(big_id, 0), headers)
    big = submission(big_id, limit - 20 - base)
    assert limit - 40 < record_bytes(big_id.encode(), big, headers) <= limit
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all",
                                max_request_size=limit + 1024)
    await producer.start()
    try:
        for wid, value in ((big_id, big), (after_id, submission(after_id, 0))):
            elsewhere = (partition_for(wid.encode(), partitions) + 1) % partitions
            await producer.send_and_wait(topic, value, key=wid.encode(), partition=elsewhere,
                                         headers=headers)
    finally:
        await producer.stop()

    status = await wait_status(stack, after_id)
    assert status["status"] == "succeeded", status
    dead = await read_topic(stack.topics.dlq, lambda rs: any(
        r.key == big_id.encode() for r in rs), scaled(30), decode=False)
    [letter] = [r for r in dead if r.key == big_id.encode()]
    reason = dict(letter.headers)["reason"].decode()
    assert "it cannot be moved there: with its moved-from header it is" in reason, reason
    assert f"over HEADWATER_MAX_MESSAGE_BYTES ({limit})" in reason, reason
