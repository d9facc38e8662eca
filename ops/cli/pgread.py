"""Read one workflow's rows from the PostgreSQL projection, for ``headwater replay``."""

from __future__ import annotations

from typing import Any

import asyncpg
import orjson

from ops.expected_rows import KindRows, ProjectionRows
from services.common.db import connect as pg_connect
from services.projector.compare import ident


async def connect(dsn: str) -> asyncpg.Connection:
    """A connection that reads ``jsonb`` as Python values (through orjson)."""
    conn = await pg_connect(dsn, timeout=30)
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
        "select status, seq, output, error, definition, definition_version, generation"
        " from workflows where workflow_id = $1", workflow_id)
    nodes = await conn.fetch(
        "select node, status, total, error from nodes where workflow_id = $1", workflow_id)
    tasks = await conn.fetch(
        "select task_key, status, attempt from tasks where workflow_id = $1", workflow_id)
    events = await conn.fetch(
        "select seq, type from events where workflow_id = $1", workflow_id)
    return ProjectionRows(
        workflow=workflow_row(wf) if wf is not None else None,
        nodes={r["node"]: {"status": r["status"], "total": r["total"], "error": r["error"]}
               for r in nodes},
        tasks={r["task_key"]: {"status": r["status"], "attempt": r["attempt"]} for r in tasks},
        events={int(r["seq"]): r["type"] for r in events},
        kinds=await read_kind_rows(conn, workflow_id),
    )


def workflow_row(row: asyncpg.Record) -> dict[str, Any]:
    """A ``workflows`` row's compared columns: ``{"status", "seq", "output", "error"}``,
    and, when the run names a definition, ``"definition": {"name", "version"}``, and a
    restarted run's ``"generation"`` (above 1)."""
    out = {k: row[k] for k in ("status", "seq", "output", "error")}
    if row["definition"] is not None:
        out["definition"] = {"name": row["definition"], "version": row["definition_version"]}
    if row.get("generation", 1) > 1:
        out["generation"] = row["generation"]
    return out


async def read_kind_rows(conn: asyncpg.Connection, workflow_id: str,
                         schema: str | None = None) -> KindRows:
    """The compared columns of one workflow's node kinds' rows (``ops.expected_rows``),
    from the tables in ``schema`` (None: the search path's, where the projector writes)."""
    s = f"{ident(schema)}." if schema else ""
    parent = await conn.fetchrow(
        f"select parent_id, parent_node, parent_index, parent_attempt from {s}workflows"
        " where workflow_id = $1 and parent_id is not null", workflow_id)
    nodes = await conn.fetch(
        f"select node, condition, wake_at from {s}nodes where workflow_id = $1"
        " and (condition is not null or wake_at is not null)", workflow_id)
    waits = await conn.fetch(f"select wait_key, signal, status, signal_id from {s}waits"
                             " where workflow_id = $1", workflow_id)
    signals = await conn.fetch(f"select seq, name, idx, signal_id, status, node from "
                               f"{s}signals where workflow_id = $1", workflow_id)
    steps = await conn.fetch(f"select node, step, tool, finish from {s}loop_steps"
                             " where workflow_id = $1", workflow_id)
    return KindRows(
        parent=None if parent is None else {
            "workflow_id": parent["parent_id"], "node": parent["parent_node"],
            "index": parent["parent_index"], "attempt": parent["parent_attempt"]},
        nodes={r["node"]: {"condition": r["condition"], "wake_at_ms": None
                           if r["wake_at"] is None else round(r["wake_at"].timestamp() * 1000)}
               for r in nodes},
        waits={r["wait_key"]: {"signal": r["signal"], "status": r["status"],
                               "signal_id": r["signal_id"]} for r in waits},
        signals={int(r["seq"]): {"name": r["name"], "index": r["idx"],
                                 "signal_id": r["signal_id"], "status": r["status"],
                                 "node": r["node"]} for r in signals},
        steps={f"{r['node']}/{r['step']}": {"tool": r["tool"], "finish": r["finish"]}
               for r in steps})
