"""Read-side views over the projection: one workflow, and listings with cursor paging."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from headwater.core.status import NodeStatus, TaskStatus
from services.gateway.cursor import decode_cursor, encode_cursor
from services.gateway.problems import Problem
from services.gateway.stream import TERMINAL_STATUSES

MAX_TASKS = 1000


def links(workflow_id: str) -> dict[str, str]:
    """Hypermedia links of a workflow."""
    base = f"/v1/workflows/{workflow_id}"
    return {"self": base, "events": f"{base}/events"}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


async def workflow_view(pool: asyncpg.Pool, workflow_id: str) -> dict[str, Any]:
    """Status, per-node state, tasks with attempts, output or error, and ``seq``.

    Raises:
        Problem: 404 when the id is unknown.
    """
    async with pool.acquire() as conn:
        row = await conn.fetchrow("select * from workflows where workflow_id = $1", workflow_id)
        if row is None:
            raise Problem(404, "Not found", f"no workflow {workflow_id}")
        nodes = {r["node"]: r for r in await conn.fetch(
            "select * from nodes where workflow_id = $1", workflow_id)}
        counts = {(r["node"], r["status"]): r["n"] for r in await conn.fetch(
            "select node, status, count(*) as n from tasks where workflow_id = $1"
            " group by node, status", workflow_id)}
        tasks = await conn.fetch(
            "select * from tasks where workflow_id = $1 order by node, idx nulls first limit $2",
            workflow_id, MAX_TASKS + 1)
    spec_nodes = (row["spec"] or {}).get("nodes", []) if isinstance(row["spec"], dict) else []
    terminal = row["status"] in TERMINAL_STATUSES
    node_views = []
    for spec_node in spec_nodes:
        node_id = spec_node.get("id") if isinstance(spec_node, dict) else None
        if not isinstance(node_id, str):
            continue
        n = nodes.get(node_id)
        status = n["status"] if n else (NodeStatus.CANCELLED if terminal else NodeStatus.PENDING)
        node_views.append({
            "id": node_id, "kind": spec_node.get("kind", "task"), "task": spec_node.get("task"),
            "status": status, "error": n["error"] if n else "",
            "total": n["total"] if n else None,
            "succeeded": counts.get((node_id, TaskStatus.SUCCEEDED), 0),
            "running": counts.get((node_id, TaskStatus.RUNNING), 0),
            "failed": counts.get((node_id, TaskStatus.FAILED), 0),
        })
    return {
        "id": workflow_id, "name": row["name"], "tenant": row["tenant"], "status": row["status"],
        "seq": row["seq"], "created_at": _iso(row["created_at"]),
        "updated_at": _iso(row["updated_at"]), "input": row["input"], "output": row["output"],
        "error": row["error"], "nodes": node_views,
        "tasks": [_task_view(t) for t in tasks[:MAX_TASKS]],
        "tasks_truncated": len(tasks) > MAX_TASKS, "links": links(workflow_id),
    }


def _task_view(t: asyncpg.Record) -> dict[str, Any]:
    return {
        "key": t["task_key"], "node": t["node"], "index": t["idx"], "attempt": t["attempt"],
        "status": t["status"], "task": t["task"], "queue": t["queue"],
        "progress": t["progress"], "message": t["message"], "error": t["error"],
        "worker": t["worker"], "dispatched_at": _iso(t["dispatched_at"]),
        "started_at": _iso(t["started_at"]), "finished_at": _iso(t["finished_at"]),
    }


async def list_view(pool: asyncpg.Pool, status: str | None, name: str | None,
                    tenant: str | None, limit: int, cursor: str | None) -> dict[str, Any]:
    """Workflows newest first, filtered, ``limit`` per page, with ``next_cursor``."""
    where: list[str] = ["true"]
    args: list[object] = []
    for column, value in (("status", status), ("name", name), ("tenant", tenant)):
        if value is not None:
            args.append(value)
            where.append(f"{column} = ${len(args)}")
    if cursor:
        created, wid = decode_cursor(cursor)
        args += [created, wid]
        where.append(f"(created_at, workflow_id) < (${len(args) - 1}, ${len(args)})")
    args.append(limit + 1)
    rows = await pool.fetch(
        "select workflow_id, name, tenant, status, seq, created_at, updated_at, error"
        f" from workflows where {' and '.join(where)}"
        f" order by created_at desc, workflow_id desc limit ${len(args)}", *args)
    items = [{"id": r["workflow_id"], "name": r["name"], "tenant": r["tenant"],
              "status": r["status"], "seq": r["seq"], "created_at": _iso(r["created_at"]),
              "updated_at": _iso(r["updated_at"]), "error": r["error"],
              "links": links(r["workflow_id"])} for r in rows[:limit]]
    last = rows[limit - 1] if len(rows) > limit else None
    return {"items": items,
            "next_cursor": encode_cursor(last["created_at"], last["workflow_id"]) if last else None}
