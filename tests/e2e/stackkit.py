"""A private Headwater stack per test session: fresh topic prefix, fresh database,
its own coordinator, gateway and worker processes, on the real Kafka and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from headwater import codec, localstack
from headwater import events as ev
from headwater.topics import Topics
from services.common.settings import default_bootstrap, default_pg_dsn

BOOTSTRAP = os.environ.get("HEADWATER_KAFKA_BOOTSTRAP", default_bootstrap())
ADMIN_DSN = os.environ.get("HEADWATER_PG_DSN", default_pg_dsn())
HERE = Path(__file__).resolve().parent
TASKS = (localstack.EXAMPLE_TASKS, "e2e_tasks")


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


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Stack:
    """One private deployment."""

    prefix: str
    dsn: str
    gateway: str
    home: Path
    env: dict[str, str]
    services: list[localstack.Service] = field(default_factory=list)

    @property
    def topics(self) -> Topics:
        """This deployment's topic names."""
        return Topics(self.prefix)

    def logs(self) -> str:
        """The tail of every service log, for failure messages."""
        parts = []
        for s in self.services:
            text = s.log_file.read_text(errors="replace") if s.log_file.exists() else ""
            parts.append(f"--- {s.name} ---\n{text[-3000:]}")
        return "\n".join(parts)


def start_stack(tmp: Path, workers: int = 1) -> Stack:
    """Create a database and start coordinator, gateway and workers with a new prefix."""
    tag = uuid.uuid4().hex[:10]
    prefix, db = f"t{tag}", f"hw_{tag}"
    asyncio.run(_create_db(db))
    dsn = ADMIN_DSN.rsplit("/", 1)[0] + f"/{db}"
    port = free_port()
    env = {
        "HEADWATER_HOME": str(tmp), "HEADWATER_TOPIC_PREFIX": prefix,
        "HEADWATER_KAFKA_BOOTSTRAP": BOOTSTRAP, "HEADWATER_PG_DSN": dsn,
        "HEADWATER_GATEWAY_PORT": str(port), "HEADWATER_DATA_DIR": str(tmp / "coordinator"),
        "HEADWATER_SSE_PING": "1",
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    os.environ["HEADWATER_HOME"] = str(tmp)  # pid and log files of this session's stack
    stack = Stack(prefix, dsn, f"http://127.0.0.1:{port}", tmp, env,
                  localstack.default_services(TASKS, workers=workers))
    pids = [localstack.start(s, env) for s in stack.services]
    try:
        localstack.wait_ready(f"{stack.gateway}/ready", timeout_s=120, pids=pids)
    except Exception as e:
        stop_stack(stack)
        raise RuntimeError(f"stack did not start: {e}\n{stack.logs()}") from e
    return stack


def stop_stack(stack: Stack) -> None:
    """Stop every process of the stack by pid, then drop its database and topics."""
    for s in stack.services:
        localstack.stop(s, timeout_s=10)
    asyncio.run(_drop(stack))


async def _drop(stack: Stack) -> None:
    conn = await asyncpg.connect(ADMIN_DSN)
    try:
        await conn.execute(f'drop database if exists "{stack.dsn.rsplit("/", 1)[1]}" with (force)')
    finally:
        await conn.close()
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics()
                if t.startswith((f"{stack.prefix}.", f"{stack.prefix}-"))]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


async def _create_db(name: str) -> None:
    conn = await asyncpg.connect(ADMIN_DSN)
    try:
        await conn.execute(f'create database "{name}"')
    finally:
        await conn.close()


async def read_topic(topic: str, stop: Callable[[list[Any]], bool], timeout_s: float = 60.0,
                     decode: bool = True) -> list[Any]:
    """Read ``topic`` from the beginning (no consumer group) until ``stop(records)``.

    Returns decoded records (or raw ``ConsumerRecord`` objects with ``decode=False``).

    Raises:
        TimeoutError: ``stop`` did not hold within ``timeout_s``.
    """
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False,
                                auto_offset_reset="earliest", group_id=None)
    await consumer.start()
    try:
        partitions = None
        deadline = time.monotonic() + timeout_s
        while partitions is None:
            partitions = consumer.partitions_for_topic(topic)
            if partitions is None:
                await consumer._client.force_metadata_update()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"topic {topic} does not exist")
                await asyncio.sleep(0.2)
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        await consumer.seek_to_beginning()
        records: list[Any] = []
        while not stop(records):
            if time.monotonic() > deadline:
                raise TimeoutError(f"gave up reading {topic} after {timeout_s} s "
                                   f"({len(records)} records)")
            batches = await consumer.getmany(timeout_ms=200)
            for batch in batches.values():
                records.extend(codec.decode(r.value) if decode else r for r in batch)
        return records
    finally:
        await consumer.stop()


async def history(stack: Stack, workflow_id: str, timeout_s: float = 60.0) -> list[ev.HistoryEvent]:
    """The workflow's records on the events topic, up to and including its terminal one."""
    def done(records: list[Any]) -> bool:
        return any(r.workflow_id == workflow_id and r.terminal for r in records)

    records = await read_topic(stack.topics.events, done, timeout_s)
    return [r for r in records if r.workflow_id == workflow_id]
