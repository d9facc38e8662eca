"""The faust seam's workarounds that need a real broker to show (of
``services/coordinator/faust_seam/``: 6, leaving the consumer group through aiokafka's
private ``GroupCoordinator._maybe_leave_group``; 12, offsets requests on a connection of
their own). The others are shown by unit tests against the libraries
(``tests/unit/services/coordinator/test_coordinator_faust_seam.py``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from consumer_groups import describe, wait_group
from stackkit import BOOTSTRAP

from services.coordinator.faust_seam.app import read_offsets
from services.coordinator.faust_seam.restore import RETRY_BACKOFF_MS
from tests.polling import holds_for_async, scaled

SESSION_TIMEOUT_MS = 30_000
"""The members' session timeout: far longer than any wait below, so that a member gone
within them left; it did not expire."""

JOIN_AND_HANG = """
import asyncio, sys
from aiokafka import AIOKafkaConsumer

async def main():
    consumer = AIOKafkaConsumer(sys.argv[1], bootstrap_servers=sys.argv[2],
                                group_id=sys.argv[1], session_timeout_ms=int(sys.argv[3]))
    await consumer.start()
    while not consumer.assignment():
        await asyncio.sleep(0.05)
    print(consumer._coordinator.member_id, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""
"""A member that joins the group named like its topic, prints its member id and hangs."""


@pytest.fixture
async def topic(services: None) -> AsyncIterator[str]:
    """A fresh one-partition topic; its consumer group has its name."""
    name = f"seam-{uuid.uuid4().hex[:10]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, 1, 1)])
        yield name
        await admin.delete_topics([name])
    finally:
        await admin.close()


async def test_a_member_that_dies_without_leaving_stays_in_its_group(topic: str) -> None:
    """Why the coordinator leaves before it execs or exits: Kafka keeps a member that
    sent no ``LeaveGroup`` until its session times out, and splits partitions with it."""
    member = subprocess.Popen([sys.executable, "-c", JOIN_AND_HANG, topic, BOOTSTRAP,
                               str(SESSION_TIMEOUT_MS)], stdout=subprocess.PIPE, text=True)
    try:
        assert member.stdout is not None
        member_id = (await asyncio.wait_for(asyncio.to_thread(member.stdout.readline),
                                            scaled(30))).strip()
    finally:
        os.kill(member.pid, signal.SIGKILL)
        member.wait()
    await holds_for_async(lambda: describe(topic), 3, f"{member_id} still a member",
                          holds=lambda group: member_id in group.members)


async def test_the_private_leave_removes_a_running_member_at_once(topic: str) -> None:
    """What ``faust_seam.leave_group`` sends from the consumer's thread, on a consumer that
    keeps running: its member is gone from the group long before its session could
    expire (aiokafka then rejoins under another id; the coordinator would have ended)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=topic,
                                session_timeout_ms=SESSION_TIMEOUT_MS)
    await consumer.start()
    try:
        member_id = consumer._coordinator.member_id
        await wait_group(topic, "the consumer in its group", 30,
                         until=lambda members: member_id in members)
        await consumer._coordinator._maybe_leave_group()
        await wait_group(topic, "the member gone", 5,
                         until=lambda members: member_id not in members)
    finally:
        await consumer.stop()


FAUST_FETCH_WAIT_MS = 1500
"""The ``fetch_max_wait_ms`` faust gives its consumer (fixed in its aiokafka driver)."""


async def test_an_offsets_request_waits_behind_an_empty_fetch(topic: str) -> None:
    """Why the coordinator's consumer sends ListOffsets through a reader of its own: on
    its own connection, an ``end_offsets`` sent while a fetch of a partition with nothing
    new is in flight waits for the broker to give up that fetch."""
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP,
                                fetch_max_wait_ms=FAUST_FETCH_WAIT_MS)
    await consumer.start()
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])  # its fetcher fetches the partition from now on
        await consumer.seek_to_end(tp)
        waits = []
        for _ in range(3):
            await asyncio.sleep(0.3)  # an empty fetch is held at the broker meanwhile
            started = time.monotonic()
            await consumer.end_offsets([tp])
            waits.append(time.monotonic() - started)
    finally:
        await consumer.stop()
    assert sorted(waits)[1] > FAUST_FETCH_WAIT_MS / 2000, waits


async def test_offsets_read_on_a_connection_of_their_own(topic: str) -> None:
    """What the coordinator's consumer answers instead (``read_offsets``): the first and
    the next offsets of the partitions asked, keyed as asked."""
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all")
    await producer.start()
    try:
        for i in range(3):
            await producer.send_and_wait(topic, b"v%d" % i, partition=0)
    finally:
        await producer.stop()
    tp = TopicPartition(topic, 0)

    def client() -> AIOKafkaConsumer:
        return AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None,
                                retry_backoff_ms=RETRY_BACKOFF_MS)

    assert await read_offsets(client, [tp], first=True) == {tp: 0}
    assert await read_offsets(client, [tp], first=False) == {tp: 3}
    assert await read_offsets(client, [], first=True) == {}
