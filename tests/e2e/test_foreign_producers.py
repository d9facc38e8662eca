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
from confluent_kafka import Producer
from stackkit import BOOTSTRAP, HERE, TASKS, Stack, read_topic
from test_kafka_submission import wait_status

from ops.sandbox import home_kept, start_sandbox, stop_sandbox
from services.common.partitioning import partition_for
from services.common.topic_reader import TopicReader
from tests.waiting import scaled, wait_until

SPEC = {"name": "foreign", "nodes": [{"id": "a", "task": "e2e.sleep",
                                      "input": {"seconds": 0.01}}]}
RUNS = 6


@pytest.fixture(scope="module")
def chatty(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack whose coordinator logs at INFO (each move's line)."""
    home: Path = tmp_path_factory.mktemp("foreign")
    with home_kept():
        stack = start_sandbox(home, TASKS, 1, pythonpath=[str(HERE)],
                              extra_env={"HEADWATER_LOG_LEVEL": "info"})
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
