"""``ctx.call_parallel`` on the real stack: a task runs 10 child runs of a stored
definition; its worker is SIGKILLed while it waits for them; the retried attempt, on
another worker, finds the same 10 children (their ids do not depend on the attempt)
rather than starting 10 more, and returns their outputs in order. And ``ctx.acall``
from async task code."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import asyncpg
from consumer_groups import wait_group_size
from stackkit import Stack
from test_kafka_submission import wait_status

from headwater.client import AsyncClient
from ops import localstack
from ops.cli.queues import wait_for_workers
from tests.polling import scaled, wait_until_async

QUEUE = "calls"
CHILD: dict[str, Any] = {"name": "child", "nodes": [
    {"id": "s", "task": "e2e.sleep", "input": {"seconds": 3}}], "output": "${input.i}"}


def worker(n: int) -> localstack.Service:
    return localstack.Service(f"worker-{QUEUE}-{n}", (
        sys.executable, "-m", "services.worker", "--queue", QUEUE, "--tasks", "call_tasks"))


def fan(child: str, marks: Path) -> dict[str, Any]:
    return {"name": "fan", "nodes": [{
        "id": "fan", "task": "e2e.call_fan", "queue": QUEUE, "heartbeat_timeout": 2,
        "retry": {"max_attempts": 3, "backoff_base": 0.1, "backoff_max": 0.1, "jitter": 0},
        "input": {"definition": child, "n": 10, "marks": str(marks)}}],
        "output": "${nodes.fan.output}"}


async def test_call_parallel_survives_a_killed_worker(stack: Stack, tmp_path: Path) -> None:
    env = {"HEADWATER_GATEWAY_URL": stack.gateway, "HEADWATER_CONCURRENCY": "2"}
    first, second = worker(1), worker(2)
    pid = stack.start(first, env)
    conn = await asyncpg.connect(stack.dsn)
    try:
        await wait_group_size(stack.topics.worker_group(QUEUE), 1, "a calls worker", 30)
        await asyncio.to_thread(wait_for_workers, stack.gateway, QUEUE, scaled(30))
        child = f"child-{uuid.uuid4().hex[:8]}"
        async with AsyncClient(stack.gateway) as hw:
            await hw.definitions.put(child, CHILD)
            parent = (await hw.submit(fan(child, tmp_path))).id

            async def children() -> int:
                return int(await conn.fetchval(
                    "select count(*) from workflows where workflow_id like $1", f"{parent}:%"))

            await wait_until_async(children, 30, "the first attempt's children",
                                   until=lambda n: n >= 3)
            os.kill(pid, signal.SIGKILL)
            stack.start(second, env)
            assert await hw.result(parent, timeout=120) == list(range(10))
            one = (await hw.submit({"name": "one", "nodes": [{
                "id": "one", "task": "e2e.acall_one", "queue": QUEUE,
                "input": {"definition": child}}], "output": "${nodes.one.output}"})).id
            assert await hw.result(one, timeout=60) == 42
        rows = await conn.fetch("select workflow_id, definition from workflows"
                                " where workflow_id like $1", f"{parent}:%")
    finally:
        await conn.close()
        for service in (first, second):
            stack.stop(service)
            stack.services.remove(service)
    assert sorted(r["workflow_id"] for r in rows) == sorted(
        f"{parent}:fan:call.{i}" for i in range(10))
    assert {r["definition"] for r in rows} == {child}
    assert {p.name for p in tmp_path.iterdir()} >= {"started-1", "started-2"}
    status = await wait_status(stack, parent)
    assert status["status"] == "succeeded"
