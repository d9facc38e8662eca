"""A reader cancelled while it starts leaves its consumer group (``kafka.client.started``),
on the real broker.

aiokafka's ``start()`` creates the group coordinator, which joins the group in the
background, and then waits for the assignment. The projector's readers run side by side
and start over together when one fails (``writer.run_projector``); one cancelled inside
``start()`` and never stopped stayed a member, assigned partitions nobody read.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterator

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from consumer_groups import describe, wait_group
from stackkit import BOOTSTRAP, require_services

from services.common.kafka.client import started
from tests.polling import wait_until_async


@pytest.fixture
def topic() -> Iterator[str]:
    """A fresh topic of two partitions, deleted afterwards."""
    require_services()
    name = f"tr{uuid.uuid4().hex[:10]}.events"
    asyncio.run(_admin(lambda admin: admin.create_topics([NewTopic(name, 2, 1)])))
    try:
        yield name
    finally:
        asyncio.run(_admin(lambda admin: admin.delete_topics([name])))


async def _admin(act: Callable[[AIOKafkaAdminClient], Awaitable[object]]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await act(admin)
    finally:
        await admin.close()


async def test_a_reader_cancelled_while_it_joins_its_group_leaves_it(topic: str) -> None:
    group = f"tr{uuid.uuid4().hex[:10]}-group"
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group)

    async def read() -> None:
        async with started(consumer):
            await asyncio.sleep(3600)

    reading = asyncio.create_task(read())
    # The moment start() has made the coordinator that joins the group, and has not yet
    # returned: cancel it there, as a failing sibling's task group would.
    await wait_until_async(lambda: consumer._coordinator is not None, 30,
                           "the consumer's group coordinator", interval_s=0.001)
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading
    await asyncio.sleep(2.0)  # a member left behind would have joined by now
    await wait_group(group, "no member left in the group", 20, lambda members: not members)
    assert not (await describe(group)).members


async def test_a_started_reader_joins_and_leaves_its_group_when_done(topic: str) -> None:
    group = f"tr{uuid.uuid4().hex[:10]}-group"
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group)
    async with started(consumer):
        await wait_group(group, "the reader in its group", 30, lambda members: len(members) == 1)
    await wait_group(group, "no member left in the group", 20, lambda members: not members)
