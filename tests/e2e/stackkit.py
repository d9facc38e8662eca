"""The end-to-end suite's helpers: a private sandbox stack and topic readers."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiokafka import AIOKafkaProducer

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from ops import localstack
from ops.sandbox import Sandbox, admin_dsn, bootstrap, set_home, start_sandbox, stop_sandbox
from services.common.topic_reader import TopicReader
from tests.polling import scaled

BOOTSTRAP = bootstrap()
ADMIN_DSN = admin_dsn()
HERE = Path(__file__).resolve().parent
TASKS = (localstack.EXAMPLE_TASKS, "e2e_tasks")
Stack = Sandbox


def require_services() -> None:
    """Fail on CI (skip elsewhere) when Kafka or PostgreSQL is not reachable."""
    host, port = BOOTSTRAP.split(",")[0].rsplit(":", 1)
    missing = []
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        missing.append(f"Kafka at {BOOTSTRAP}")
    try:
        asyncio.run(_pg_ping())
    except (OSError, asyncpg.PostgresError) as e:
        missing.append(f"PostgreSQL at {ADMIN_DSN} ({e})")
    if missing:
        message = f"needs {' and '.join(missing)}; run `bash infra/stack.sh up`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


async def _pg_ping() -> None:
    conn = await asyncpg.connect(ADMIN_DSN, timeout=3)
    await conn.close()


def start_stack(home: Path, workers: int = 1) -> Sandbox:
    """A sandbox whose workers import the example's and the suite's tasks."""
    return start_sandbox(home, TASKS, workers, pythonpath=[str(HERE)],
                         extra_env={"HEADWATER_SSE_PING": "1"})


def stop_stack(stack: Sandbox) -> None:
    """Stop the sandbox and drop its database and topics."""
    stop_sandbox(stack)


@contextmanager
def private_stack(home: Path, workers: int = 1,
                  extra_env: dict[str, str] | None = None,
                  more_tasks: tuple[str, ...] = ()) -> Iterator[Sandbox]:
    """A sandbox of one module's own in ``home``, whose workflows and consumer-group
    members other tests do not see, stopped (database and topics dropped) on exit.
    Sandboxes set ``HEADWATER_HOME`` for localstack's pid files: the session's is put
    back while it runs, and this one's set again to stop it; at the end the home is put
    back as it is then, not as it was at the start (the session's stack may have started
    meanwhile, in one of this module's tests). ``more_tasks``: modules of this directory
    its worker imports besides the suite's."""
    before = os.environ.get("HEADWATER_HOME")
    stack = start_sandbox(home, (*TASKS, *more_tasks), workers, pythonpath=[str(HERE)],
                          extra_env={"HEADWATER_SSE_PING": "1", **(extra_env or {})})
    set_home(before)
    try:
        yield stack
    finally:
        current = os.environ.get("HEADWATER_HOME")
        os.environ["HEADWATER_HOME"] = str(home)
        try:
            stop_sandbox(stack)
        finally:
            set_home(current)


async def read_topic(topic: str, stop: Callable[[list[Any]], bool],
                     timeout_s: float | None = None, decode: bool = True) -> list[Any]:
    """Read ``topic`` from the beginning (no consumer group) until ``stop(records)``,
    for ``timeout_s`` seconds (callers pass it scaled; by default ``scaled(60)``).

    Returns decoded records (or raw ``ConsumerRecord`` objects with ``decode=False``);
    decoded, records that are not Headwater's Avro are left out: the inputs topics take
    JSON too, and other tests on the session's stack produce bad records on purpose.

    Raises:
        TimeoutError: ``stop`` did not hold within ``timeout_s``.
    """
    timeout_s = scaled(60) if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    records: list[Any] = []
    async with TopicReader(BOOTSTRAP) as reader:
        partitions = await reader.partitions(topic, wait_s=timeout_s)
        if not partitions:
            raise TimeoutError(f"topic {topic} does not exist")
        start = await reader.beginning_offsets(topic, partitions)
        if stop(records):
            return records
        try:
            async for batch in reader.follow(topic, start, poll_s=0.2,
                                             timeout_s=deadline - time.monotonic()):
                records.extend(decoded(batch) if decode else batch)
                if stop(records):
                    break
        except TimeoutError:
            raise TimeoutError(f"gave up reading {topic} after {timeout_s} s "
                               f"({len(records)} records)") from None
    return records


def decoded(batch: Iterable[Any]) -> list[Any]:
    """The records of ``batch`` that decode (``read_topic``)."""
    out = []
    for r in batch:
        try:
            out.append(codec.decode(r.value))
        except DecodeError:
            continue
    return out


async def history(stack: Stack, workflow_id: str, timeout_s: float = 60.0) -> list[ev.HistoryEvent]:
    """The workflow's records on the events topic, up to and including its terminal one
    (``timeout_s`` is scaled by ``HEADWATER_TEST_TIME_SCALE``, see ``tests/polling.py``)."""
    def done(records: list[Any]) -> bool:
        return any(r.workflow_id == workflow_id and r.terminal for r in records)

    records = await read_topic(stack.topics.events, done, scaled(timeout_s))
    return [r for r in records if r.workflow_id == workflow_id]


async def produce(records: Iterable[tuple[str, bytes, bytes]],
                  headers: list[tuple[str, bytes]] | None = None) -> None:
    """Produce ``(topic, key, value)`` records straight to Kafka, in order, each one
    acknowledged by every replica (``acks=all``) before the next is sent."""
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all")
    await producer.start()
    try:
        for topic, key, value in records:
            await producer.send_and_wait(topic, value, key=key, headers=headers)
    finally:
        await producer.stop()


async def submit_to_kafka(stack: Stack, *submissions: ev.WorkflowSubmitted) -> None:
    """Produce ``WorkflowSubmitted`` records (Avro) to the stack's submissions topic."""
    await produce((stack.topics.submissions, s.workflow_id.encode(), codec.encode(s))
                  for s in submissions)
