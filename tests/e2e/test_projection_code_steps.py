"""A code workflow's own steps projected into a real PostgreSQL: the history of a run of
the real core (``headwater.testing.Environment``: a patch marker, a gather, a sleep, a
signal wait and one that times out) written by the projector, in one batch and event by
event, gives a row per step with its times, and a ``waits`` row per signal wait: the
statements are ones PostgreSQL accepts (their parameters' types agree), which no unit
test without a database can tell."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from code_versions import first, second_v2, square
from stackkit import ADMIN_DSN

from headwater import StepFailed, WorkflowContext, workflow
from headwater.testing import Environment
from services.common.db import connect_pool
from services.projector.writer import project


@workflow(name="pj.flow", queue="cv")
async def flow(wf: WorkflowContext, x: int) -> dict[str, Any]:
    """A task, a patched step, a gather of two, a sleep, the signal ``go`` and a wait
    for ``late`` that times out."""
    a = int(await wf.run(first, x=x))
    b = int(await wf.run(second_v2, x=a)) if wf.patched("second-v2") else a
    squares = await wf.gather(wf.run(square, x=2), wf.run(square, x=3))
    await wf.sleep(30)
    go = await wf.signal("go", timeout=600)
    try:
        late = await wf.signal("late", timeout=5)
    except StepFailed as e:
        late = e.error_type
    return {"b": b, "squares": squares, "go": go, "late": late}


@pytest.fixture
async def pools(services: None) -> AsyncIterator[list[asyncpg.Pool]]:
    """Two fresh databases (dropped after)."""
    names = [f"hw_projcode_{uuid.uuid4().hex[:8]}" for _ in range(2)]
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


async def test_a_code_runs_own_steps_are_projected_with_their_times(
        pools: list[asyncpg.Pool]) -> None:
    env = Environment()
    run = await env.start(flow, x=4)
    await env.signal(run, "go", {"ok": True})
    assert await env.result(run) == {"b": 500, "squares": [4, 9], "go": {"ok": True},
                                     "late": "TimeoutError"}
    events = env.history(run)
    async with pools[0].acquire() as conn:
        await project(conn, list(events))
    async with pools[1].acquire() as conn:
        for e in events:
            await project(conn, [e])
    rows = {r["idx"]: dict(r) for r in await pools[0].fetch(
        "select idx, task, status, message, started_at, finished_at, progress from tasks"
        " where node = 'main' order by idx")}
    steps = {i: (r["task"], r["status"]) for i, r in rows.items() if i % 2}
    assert steps == {1: ("cv.first", "succeeded"), 3: ("headwater.patch", "succeeded"),
                     5: ("cv.second_v2", "succeeded"), 7: ("cv.square", "succeeded"),
                     9: ("cv.square", "succeeded"), 11: ("headwater.sleep", "succeeded"),
                     13: ("headwater.signal", "succeeded"),
                     15: ("headwater.signal", "failed")}, steps
    patch, nap, wait = rows[3], rows[11], rows[13]
    assert patch["message"] == "patched: second-v2" and patch["progress"] == 1.0, patch
    assert patch["finished_at"] == patch["started_at"], patch
    assert nap["message"] == "sleep 30 s", nap
    assert (nap["finished_at"] - nap["started_at"]).total_seconds() == 30, nap
    assert wait["message"] == "wait for signal go (timeout 600 s)", wait
    assert wait["finished_at"] >= wait["started_at"], wait
    assert all(r["status"] == "succeeded" for i, r in rows.items() if i % 2 == 0)
    waits = {r["wait_key"]: dict(r) for r in await pools[0].fetch(
        "select wait_key, node, idx, signal, status, fields, started_at, timeout_at,"
        " ended_at from waits")}
    assert {k: (w["signal"], w["status"], w["idx"], w["fields"]) for k, w in waits.items()} == {
        "main[13]": ("go", "signalled", None, {"ok": True}),
        "main[15]": ("late", "timed_out", None, None)}, waits
    for key, timeout in (("main[13]", 600), ("main[15]", 5)):
        w = waits[key]
        assert (w["timeout_at"] - w["started_at"]).total_seconds() == timeout, w
        assert w["started_at"] == rows[int(key[5:-1])]["started_at"], (w, rows)
    assert waits["main[15]"]["ended_at"] == waits["main[15]"]["timeout_at"]
    for table in ("tasks", "waits", "workflows", "events"):
        batched = [tuple(r) for r in await pools[0].fetch(f"select * from {table} order by 1, 2")]
        single = [tuple(r) for r in await pools[1].fetch(f"select * from {table} order by 1, 2")]
        assert batched == single, table
