"""Projection retention on the real PostgreSQL: ``purge_once`` deletes the rows of runs
that ended before the period, and keeps running runs and recent ones."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from stackkit import ADMIN_DSN

from services.common.db import connect_pool
from services.projector.retention import projection_retention, purge_once


@pytest.fixture
async def conn(services: None) -> AsyncIterator[asyncpg.Connection]:
    name = f"hw_ret_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    await admin.execute(f"create database {name}")
    dsn = ADMIN_DSN.rsplit("/", 1)[0] + f"/{name}"
    pool = await connect_pool(dsn, max_size=1)
    await pool.close()
    c = await asyncpg.connect(dsn)
    try:
        yield c
    finally:
        await c.close()
        await admin.execute(f"drop database {name}")
        await admin.close()


async def _run(conn: asyncpg.Connection, wid: str, status: str, age_s: int) -> None:
    await conn.execute("insert into workflows (workflow_id, status, created_at, updated_at) "
                       "values ($1, $2, now() - $3 * interval '1 second', "
                       "now() - $3 * interval '1 second')", wid, status, age_s)
    await conn.execute("insert into events (workflow_id, seq, type, at, data) values "
                       "($1, 1, 'WorkflowAccepted', now(), '{}')", wid)


async def test_only_runs_ended_before_the_period_lose_their_rows(
        conn: asyncpg.Connection) -> None:
    await _run(conn, "old-done", "succeeded", 7200)
    await _run(conn, "old-running", "running", 7200)
    await _run(conn, "new-done", "failed", 10)
    assert await purge_once(conn, 3600) == 1
    kept = {r["workflow_id"] for r in await conn.fetch("select workflow_id from workflows")}
    assert kept == {"old-running", "new-done"}
    events = {r["workflow_id"] for r in await conn.fetch("select workflow_id from events")}
    assert events == kept
    assert await purge_once(conn, 3600) == 0


def test_the_projection_retention_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_PROJECTION_RETENTION", raising=False)
    assert projection_retention() == (False, 604_800.0)
    monkeypatch.setenv("HEADWATER_PROJECTION_RETENTION", "purge")
    monkeypatch.setenv("HEADWATER_PROJECTION_RETENTION_S", "60")
    assert projection_retention() == (True, 60.0)
    monkeypatch.setenv("HEADWATER_PROJECTION_RETENTION", "sometimes")
    with pytest.raises(ValueError, match="keep or purge"):
        projection_retention()
