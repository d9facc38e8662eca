"""The PostgreSQL projection on a real database: batched and one-by-one projection give
the same rows; duplicates and out-of-order delivery never move a row backwards; values
PostgreSQL refuses are stored sanitised instead of stalling the projection."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from stackkit import ADMIN_DSN

from headwater.core import events as ev
from headwater.core.machine import step
from services.common.db import connect_pool
from services.projector.writer import project
from tests.polling import scaled

T0 = 1_800_000_000_000
SPEC = {"name": "proj", "retry": {"max_attempts": 2, "backoff_base": 0.1},
        "nodes": [{"id": "a", "task": "t"},
                  {"id": "m", "kind": "map", "over": "${nodes.a.output}", "task": "t",
                   "needs": ["a"], "input": {"x": "${item}"}},
                  {"id": "z", "task": "t", "needs": ["m"], "input": "${nodes.m.output}"}]}


def history(workflow_id: str) -> list[ev.HistoryEvent]:
    """A run with a map, a retry of one item, progress and success."""
    t = iter(range(T0, T0 + 10_000, 10))
    out: list[ev.HistoryEvent] = []
    state = None

    def feed(item: ev.Input) -> None:
        nonlocal state
        result = step(state, item)
        state = result.state
        out.extend(result.events)

    feed(ev.WorkflowSubmitted(workflow_id, SPEC, {"k": "v"}, next(t)))
    feed(ev.TaskStarted(workflow_id, "a", None, 1, next(t), "w1"))
    feed(ev.TaskSucceeded(workflow_id, "a", None, 1, next(t), [1, 2, 3]))
    for i in range(3):
        feed(ev.TaskStarted(workflow_id, "m", i, 1, next(t), "w1"))
        feed(ev.TaskProgressed(workflow_id, "m", i, 1, next(t), 0.5, "half"))
    feed(ev.TaskFailed(workflow_id, "m", 1, 1, next(t), "flaky", "E", True))
    timer = next(e.body for e in out if isinstance(e.body, ev.TimerScheduled))
    feed(ev.TimerFired(workflow_id, timer.timer_id, timer.fire_at_ms))
    feed(ev.TaskStarted(workflow_id, "m", 1, 2, timer.fire_at_ms + 1, "w2"))
    for i, attempt in ((0, 1), (1, 2), (2, 1)):
        feed(ev.TaskSucceeded(workflow_id, "m", i, attempt, timer.fire_at_ms + 10 + i, i * 10))
    feed(ev.TaskSucceeded(workflow_id, "z", None, 1, timer.fire_at_ms + 50, "done"))
    assert isinstance(out[-1].body, ev.WorkflowSucceeded)
    return out


@pytest.fixture
async def pools(services: None) -> AsyncIterator[list[asyncpg.Pool]]:
    names = [f"hw_proj_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    admin = await asyncpg.connect(ADMIN_DSN)
    for name in names:
        await admin.execute(f'create database "{name}"')
    base = ADMIN_DSN.rsplit("/", 1)[0]
    opened = [await connect_pool(f"{base}/{name}") for name in names]
    try:
        yield opened
    finally:
        for pool in opened:
            await pool.close()
        for name in names:
            await admin.execute(f'drop database "{name}" with (force)')
        await admin.close()


async def dump(pool: asyncpg.Pool) -> dict[str, list[tuple[Any, ...]]]:
    tables = {"workflows": "workflow_id", "nodes": "workflow_id, node",
              "tasks": "workflow_id, task_key", "events": "workflow_id, seq"}
    return {t: [tuple(r) for r in await pool.fetch(f"select * from {t} order by {order}")]
            for t, order in tables.items()}


async def test_batched_and_one_by_one_projection_give_the_same_rows(
        pools: list[asyncpg.Pool]) -> None:
    events = history("wf-p1")
    async with pools[0].acquire() as conn:
        await project(conn, list(events))
    async with pools[1].acquire() as conn:
        for e in events:
            await project(conn, [e])
    batched, single = await dump(pools[0]), await dump(pools[1])
    assert batched == single
    assert len(batched["events"]) == len(events)
    row = await pools[0].fetchrow("select status, seq, output from workflows")
    assert (row["status"], row["seq"], row["output"]) == ("succeeded", len(events), {"z": "done"})
    retried = await pools[0].fetchrow("select attempt, status from tasks where task_key = 'm[1]'")
    assert (retried["attempt"], retried["status"]) == (2, "succeeded")


async def test_duplicates_and_out_of_order_never_move_a_row_backwards(
        pools: list[asyncpg.Pool]) -> None:
    events = history("wf-p2")
    n = len(events)
    async with pools[0].acquire() as conn:
        await project(conn, [events[n - 1]])  # the terminal event first
        await project(conn, [events[n - 3], events[n - 5]])  # then older ones, out of order
        await project(conn, list(reversed(events)))  # everything again, backwards
        await project(conn, list(events))  # and once more in order
    row = await pools[0].fetchrow("select status, seq from workflows")
    assert (row["status"], row["seq"]) == ("succeeded", n)
    async with pools[1].acquire() as conn:
        await project(conn, list(events))
    assert await dump(pools[0]) == await dump(pools[1])


async def test_values_postgres_refuses_are_stored_sanitised(pools: list[asyncpg.Pool]) -> None:
    events = history("wf-p3")
    bad = ev.HistoryEvent("wf-p3", len(events) + 1, ev.WorkflowSucceeded(
        "wf-p3", T0, {"text": "a\x00b", "deep": nest(300)}))
    events[-1] = ev.HistoryEvent("wf-p3", len(events), bad.body)
    async with pools[0].acquire() as conn:
        await asyncio.wait_for(project(conn, events), scaled(30))
    row = await pools[0].fetchrow("select status, output from workflows")
    assert row["status"] == "succeeded"
    assert row["output"]["text"] == "a\ufffdb"
    assert await pools[0].fetchval("select count(*) from events") == len(events)


def nest(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value
