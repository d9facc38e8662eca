"""The projection's reads behind a run's task views: a task's row and its attempts'
events, a page of a node's tasks, and the events that say what failed a run.

Each is an index scan: ``tasks`` by its key or by ``tasks_by_node`` (workflow, node,
index) in index order, never a sort of a node's every row; ``events`` by its key, from a
task's first dispatch (``tasks.first_seq``) to its last change (``tasks.seq``), or
backwards from a failed run's end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg

from headwater.core.ids import task_key
from services.gateway.tasks.views import ATTEMPT_EVENTS, Row


async def run_row(conn: asyncpg.Connection, workflow_id: str) -> Row | None:
    """The run's ``tenant``, ``status`` and ``spec``, or None for an unknown id."""
    row: Row | None = await conn.fetchrow(
        "select tenant, status, spec from workflows where workflow_id = $1", workflow_id)
    return row


async def task_row(conn: asyncpg.Connection, workflow_id: str, node: str,
                   index: int | None) -> Row | None:
    """A task's ``tasks`` row, or None."""
    row: Row | None = await conn.fetchrow(
        "select * from tasks where workflow_id = $1 and task_key = $2", workflow_id,
        task_key(node, index))
    return row


async def attempt_events(conn: asyncpg.Connection, workflow_id: str, row: Row) -> list[Row]:
    """The history events of a task's attempts (``views.ATTEMPT_EVENTS``), oldest first,
    between its first dispatch and its row's last change."""
    events: list[Row] = await conn.fetch(
        "select seq, type, at, data from events where workflow_id = $1 and seq >= $2"
        " and seq <= $3 and type = any($4::text[]) and data->>'node' = $5"
        " and coalesce((data->>'index')::bigint, -1) = $6 order by seq",
        workflow_id, row["first_seq"] or 0, row["seq"], list(ATTEMPT_EVENTS), row["node"],
        -1 if row["idx"] is None else row["idx"])
    return events


@dataclass(frozen=True)
class NodePage:
    """A page of a node's tasks.

    Attributes:
        rows: its ``tasks`` rows in index order, at most the page's limit.
        total: how many of the node's tasks match the filter.
        next: the index to pass as ``after`` for the next page; None on the last.
    """

    rows: list[Row]
    total: int
    next: int | None


async def node_page(conn: asyncpg.Connection, workflow_id: str, node: str, after: int | None,
                    limit: int, status: str | None) -> NodePage:
    """The node's tasks after index ``after`` (None: from the first), at most ``limit``,
    with ``status`` only when given."""
    where = "workflow_id = $1 and node = $2"
    args: list[Any] = [workflow_id, node]
    if status is not None:
        args.append(status)
        where += f" and status = ${len(args)}"
    total = await conn.fetchval(f"select count(*) from tasks where {where}", *args)
    if after is not None:
        args.append(after)
        where += f" and idx > ${len(args)}"
    args.append(limit + 1)
    rows = await conn.fetch(
        f"select * from tasks where {where} order by idx nulls first limit ${len(args)}", *args)
    more = len(rows) > limit
    rows = rows[:limit]
    return NodePage(list(rows), int(total), rows[-1]["idx"] if more else None)


async def failed_by(conn: asyncpg.Connection,
                    workflow_id: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What failed a failed run: the data of the failed ``NodeFinished`` and of that
    node's ``TaskFailed`` recorded in the step that recorded its ``WorkflowFailed``
    (the same ``at_ms``; each None when that step has none), or a code workflow's
    function's own failure (``_function_failed``), read backwards from the end of its
    history."""
    end = await conn.fetchrow(
        "select seq, data->>'at_ms' as at_ms from events where workflow_id = $1"
        " and type = 'WorkflowFailed' order by seq desc limit 1", workflow_id)
    if end is None:
        return None, None
    node = await conn.fetchrow(
        "select seq, data from events where workflow_id = $1 and seq < $2"
        " and type = 'NodeFinished' and data->>'status' = 'failed' and data->>'at_ms' = $3"
        " order by seq desc limit 1", workflow_id, end["seq"], end["at_ms"])
    if node is None:
        return None, None
    task = await conn.fetchrow(
        "select data from events where workflow_id = $1 and seq < $2 and type = 'TaskFailed'"
        " and data->>'node' = $3 and data->>'at_ms' = $4 order by seq desc limit 1",
        workflow_id, node["seq"], node["data"].get("node"), end["at_ms"])
    if task is None:
        return node["data"], await _function_failed(conn, workflow_id, node["seq"],
                                                    node["data"].get("node"), end["at_ms"])
    return node["data"], task["data"]


async def _function_failed(conn: asyncpg.Connection, workflow_id: str, before: int,
                           node: Any, at_ms: str) -> dict[str, Any] | None:
    """A code workflow's function that raised: its activation's decision ``fail`` (the
    exception's type, message and traceback, which name the step that failed it) in the
    step that failed the run, as the data of a ``TaskFailed`` of that activation; None
    for any other run."""
    decided = await conn.fetchrow(
        "select data from events where workflow_id = $1 and seq < $2 and type = 'TaskSucceeded'"
        " and data->>'node' = $3 and data->>'at_ms' = $4 and data->'output' ? 'fail'"
        " order by seq desc limit 1", workflow_id, before, node, at_ms)
    if decided is None:
        return None
    data = decided["data"]
    fail = data["output"]["fail"] if isinstance(data.get("output"), dict) else None
    if not isinstance(fail, dict):
        return None
    return {"node": data.get("node"), "index": data.get("index"), "attempt": data.get("attempt"),
            "error_type": str(fail.get("type") or ""), "error": str(fail.get("message") or ""),
            "traceback": str(fail.get("traceback") or "")}
