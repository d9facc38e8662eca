"""Read one workflow's rows from the PostgreSQL projection, for ``headwater replay``."""

from __future__ import annotations

import asyncpg
import orjson

from ops.expected_rows import ProjectionRows


async def connect(dsn: str) -> asyncpg.Connection:
    """A connection that reads ``jsonb`` as Python values (through orjson)."""
    conn = await asyncpg.connect(dsn, timeout=30)
    await conn.set_type_codec("jsonb", schema="pg_catalog", format="text",
                              encoder=lambda v: orjson.dumps(v).decode(),
                              decoder=orjson.loads)
    return conn


async def read_rows(dsn: str, workflow_id: str) -> ProjectionRows:
    """The compared columns of the workflow's rows (see ``ops.expected_rows``).

    Raises:
        OSError or asyncpg.PostgresError: the database cannot be read. A database
            without the projection's tables reads as empty.
    """
    conn = await connect(dsn)
    try:
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            return await _read(conn, workflow_id)
    except asyncpg.UndefinedTableError:
        return ProjectionRows()
    finally:
        await conn.close()


async def _read(conn: asyncpg.Connection, workflow_id: str) -> ProjectionRows:
    wf = await conn.fetchrow(
        "select status, seq, output, error from workflows where workflow_id = $1",
        workflow_id)
    nodes = await conn.fetch(
        "select node, status, total, error from nodes where workflow_id = $1", workflow_id)
    tasks = await conn.fetch(
        "select task_key, status, attempt from tasks where workflow_id = $1", workflow_id)
    events = await conn.fetch(
        "select seq, type from events where workflow_id = $1", workflow_id)
    return ProjectionRows(
        workflow=dict(wf) if wf is not None else None,
        nodes={r["node"]: {"status": r["status"], "total": r["total"], "error": r["error"]}
               for r in nodes},
        tasks={r["task_key"]: {"status": r["status"], "attempt": r["attempt"]} for r in tasks},
        events={int(r["seq"]): r["type"] for r in events},
    )
