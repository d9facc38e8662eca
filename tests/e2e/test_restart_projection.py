"""``restart_on_failure`` against the real PostgreSQL projection: a restarted run's rows
must not depend on how its history was batched, nor on an older generation's events
arriving again after the restart was projected (a second projector finishing its batch
during a rebalance, a redelivery). Each test projects a history the pure machine
recorded into a database of its own."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from stackkit import ADMIN_DSN

from headwater.core import events as ev
from ops.cli.pgread import read_rows
from ops.expected_rows import diff_rows, expected_rows
from ops.history import fold
from services.common.db import connect_pool
from services.projector.writer import project

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "headwater" / "core"))
from machine_harness import T0, fired, ok, run, started, submit

KEYS = {"workflows": "workflow_id", "nodes": "workflow_id, node",
        "tasks": "workflow_id, task_key", "events": "workflow_id, seq",
        "loop_steps": "workflow_id, node, step"}
WF = "wf-rb"
LISTED = {"name": "listed", "restart_on_failure": True, "nodes": [
    {"id": "a", "task": "t.list", "heartbeat_timeout": 2},
    {"id": "m", "kind": "map", "over": "${nodes.a.output}", "task": "t.item", "needs": ["a"],
     "input": {"x": "${item}"}, "heartbeat_timeout": 2}]}
"""A map over what its upstream task returned: a new generation may list other items."""
CHAIN = {"name": "chain", "restart_on_failure": True, "nodes": [
    {"id": "a", "task": "t.a", "heartbeat_timeout": 2},
    {"id": "b", "task": "t.b", "needs": ["a"], "heartbeat_timeout": 2},
    {"id": "c", "task": "t.c", "needs": ["b"], "heartbeat_timeout": 2}]}


def listed_history() -> list[ev.HistoryEvent]:
    """Generation 1 lists three items and loses ``m[0]``; generation 2 lists one."""
    return run([
        submit(LISTED, wf=WF), started("a", wf=WF), ok("a", [1, 2, 3], at=T0 + 60, wf=WF),
        started("m", index=0, at=T0 + 70, wf=WF), fired("lease:m[0]:1", T0 + 2070, wf=WF),
        started("a", attempt=2, at=T0 + 2100, wf=WF),
        ok("a", [9], attempt=2, at=T0 + 2200, wf=WF)]).history


def chain_history() -> list[ev.HistoryEvent]:
    """Generation 1 runs ``a`` and loses ``b``; generation 2 has only dispatched ``a``."""
    return run([
        submit(CHAIN, wf=WF), started("a", wf=WF), ok("a", "A", at=T0 + 60, wf=WF),
        started("b", at=T0 + 70, wf=WF), fired("lease:b:1", T0 + 2070, wf=WF)]).history


@pytest.fixture
async def dsns(services: None) -> AsyncIterator[list[str]]:
    names = [f"hw_rb_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    admin = await asyncpg.connect(ADMIN_DSN)
    for name in names:
        await admin.execute(f'create database "{name}"')
    base = ADMIN_DSN.rsplit("/", 1)[0]
    try:
        yield [f"{base}/{name}" for name in names]
    finally:
        for name in names:
            await admin.execute(f'drop database "{name}" with (force)')
        await admin.close()


async def projected(dsn: str, batches: list[list[ev.HistoryEvent]],
                    ) -> dict[str, list[tuple[Any, ...]]]:
    """Project ``batches`` in order (one transaction each); every row of every table."""
    pool = await connect_pool(dsn)
    try:
        for batch in batches:
            async with pool.acquire() as conn:
                await project(conn, list(batch))
        return {t: [tuple(r) for r in await pool.fetch(f"select * from {t} order by {k}")]
                for t, k in KEYS.items()}
    finally:
        await pool.close()


async def test_a_restarted_map_that_lists_fewer_items_has_one_total_however_batched(
        dsns: list[str]) -> None:
    """The log's rows are the same in one batch (a rebuild, a projector catching up) as
    event by event (the live projector): ``nodes.total`` is the new generation's size."""
    history = listed_history()
    assert [b.count for b in (e.body for e in history) if isinstance(b, ev.MapExpanded)] == [
        3, 1]
    one = await projected(dsns[0], [history])
    single = await projected(dsns[1], [[e] for e in history])
    assert one["nodes"] == single["nodes"]
    expected = expected_rows(fold(history).state, history)
    assert diff_rows(expected, await read_rows(dsns[0], WF)) == []


async def test_an_old_generations_events_projected_again_leave_no_row_behind(
        dsns: list[str]) -> None:
    """A batch of generation 1 projected after the restart (a projector that lost its
    partitions finishing the batch in hand, as ``writer.Projector`` does) changes
    nothing, as for any other duplicate: no ``tasks`` or ``nodes`` row of ``b``, which
    generation 2 has not reached."""
    history = chain_history()
    restart = next(i for i, e in enumerate(history) if isinstance(e.body, ev.WorkflowRestarted))
    clean = await projected(dsns[0], [history])
    late = await projected(dsns[1], [history, history[:restart]])
    assert late["tasks"] == clean["tasks"]
    assert late["nodes"] == clean["nodes"]
    expected = expected_rows(fold(history).state, history)
    assert diff_rows(expected, await read_rows(dsns[1], WF)) == []

