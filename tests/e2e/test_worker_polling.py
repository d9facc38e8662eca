"""A worker run in this process on the real broker, with its own topics and no
coordinator: dispatches are produced straight to ``tasks.cpu`` and reports read back."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from stackkit import BOOTSTRAP, require_services
from stackkit import produce as stackkit_produce

from headwater import codec
from headwater.core import events as ev
from headwater.topics import Topics
from services.common.kafka.client import ensure_topics
from services.worker.app import Worker
from services.worker.settings import Settings
from tests.polling import holds_for_async, wait_until_async


@contextlib.contextmanager
def fresh_topics() -> Iterator[Topics]:
    """A fresh topic prefix; its topics are deleted afterwards."""
    require_services()
    names = Topics(f"tw{uuid.uuid4().hex[:10]}")
    try:
        yield names
    finally:
        asyncio.run(_delete_topics(names))


@pytest.fixture
def topics() -> Iterator[Topics]:
    """A fresh topic prefix (see ``fresh_topics``)."""
    with fresh_topics() as names:
        yield names


async def _delete_topics(names: Topics) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics() if t.startswith(f"{names.prefix}.")]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


def worker_settings(topics: Topics, **overrides: Any) -> Settings:
    """One-partition topics under ``topics.prefix``, queue ``cpu``."""
    return Settings(bootstrap=BOOTSTRAP, prefix=topics.prefix, partitions=1, queue="cpu",
                    task_modules=("e2e_tasks",), worker_id="in-process", **overrides)


async def produce(topics: Topics, *dispatches: ev.TaskDispatched) -> None:
    """Create the topics (one partition each) and produce ``dispatches`` to ``tasks.cpu``."""
    await ensure_topics(worker_settings(topics), [topics.tasks("cpu"), topics.reports,
                                                  topics.dlq])
    await stackkit_produce((topics.tasks("cpu"), d.workflow_id.encode(), codec.encode(d))
                           for d in dispatches)


def dispatch(workflow_id: str, task: str, input: dict[str, Any]) -> ev.TaskDispatched:
    return ev.TaskDispatched(workflow_id, "n", None, 1, task, "cpu", input,
                             int(time.time() * 1000))


async def read_all(topic: str) -> list[Any]:
    """Every record in ``topic`` (one partition) now, decoded."""
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None,
                                max_partition_fetch_bytes=16 * 1024 * 1024)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        out: list[Any] = []
        while await consumer.position(tp) < end:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                out.extend(codec.decode(r.value) for r in batch)
        return out
    finally:
        await consumer.stop()


async def committed(topics: Topics) -> int | None:
    """The worker group's committed offset of ``tasks.cpu`` partition 0."""
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(topics.worker_group("cpu"))
    finally:
        await admin.close()
    meta = offsets.get(TopicPartition(topics.tasks("cpu"), 0))
    return None if meta is None else int(meta.offset)


@contextlib.asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``worker`` in the background; check it is still running before stopping it."""
    served = asyncio.create_task(worker.run())
    try:
        yield served
        assert not served.done(), served.exception() if served.done() else None
    finally:
        served.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await served


def outcomes(reports: list[Any]) -> list[Any]:
    return [r for r in reports if isinstance(r, ev.TaskSucceeded | ev.TaskFailed)]


async def test_a_task_longer_than_max_poll_interval_runs_once(topics: Topics) -> None:
    # One slot, busy for twice max.poll.interval.ms: the worker must keep polling (paused)
    # or the group drops it, and the dispatch is delivered and run again.
    settings = worker_settings(topics, concurrency=1, max_poll_interval_ms=3000)
    await produce(topics, dispatch("long", "e2e.sleep", {"seconds": 7}),
                  dispatch("short", "e2e.sleep", {"seconds": 0}))
    async with running(Worker(settings)):
        async def reports() -> list[Any]:
            return await read_all(topics.reports)

        await wait_until_async(reports, 60, "both outcomes reported",
                               until=lambda rs: len(outcomes(rs)) >= 2, interval_s=0.5)
        await wait_until_async(lambda: committed(topics), 15, "offset 2 committed",
                               until=lambda offset: offset == 2, interval_s=0.5)
        # A re-run would show up by now.
        await holds_for_async(reports, 2, "two starts, no re-run",
                              holds=lambda rs: len(_starts(rs)) <= 2, interval_s=0.5)
        reports_now = await read_all(topics.reports)
    started = [r.workflow_id for r in _starts(reports_now)]
    assert started == ["long", "short"]
    assert [(r.workflow_id, r.output) for r in outcomes(reports_now)] == [("long", 7), ("short", 0)]


async def test_an_output_the_broker_refuses_becomes_a_failure(topics: Topics) -> None:
    # The reports topic takes 20 kB at most while the producer allows 16 MiB: the broker
    # refuses the TaskSucceeded, which also leaves the idempotent producer unusable.
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topics.reports, 1, 1,
                                            topic_configs={"max.message.bytes": "20000"})])
    finally:
        await admin.close()
    await produce(topics, dispatch("big", "e2e.big_output", {"size": 50_000}),
                  dispatch("after", "e2e.big_output", {"size": 10}))
    async with running(Worker(worker_settings(topics, concurrency=1))):
        await wait_until_async(lambda: committed(topics), 60, "offset 2 committed",
                               until=lambda offset: offset == 2, interval_s=0.5)
        reports = await read_all(topics.reports)
    big, after = outcomes(reports)
    assert isinstance(big, ev.TaskFailed) and big.workflow_id == "big"
    assert (big.error_type, big.retryable) == ("ReportNotSentError", False)
    assert "MessageSizeTooLargeError" in big.error
    assert isinstance(after, ev.TaskSucceeded) and after.output == "x" * 10


def _starts(reports: list[Any]) -> list[ev.TaskStarted]:
    return [r for r in reports if isinstance(r, ev.TaskStarted)]
