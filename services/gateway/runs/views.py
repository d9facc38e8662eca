"""Read-side view of one workflow over the projection, with what its node kinds add:
parent and children, waits and signals, the next wake-up, conditions, loop steps. What
it shares with a listing's item (links, definition, pause, priority, reruns) is
``runs.facts``'s; listings are ``runs.listing``'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg

from headwater.core.ids import child_id, task_key
from headwater.core.spec import NodeKind
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus
from services.gateway.edge.problems import Problem
from services.gateway.queues.marks import attempt_warnings, requires_of
from services.gateway.runs.facts import (
    definition_of,
    links,
    paused_view,
    priority_of,
    rerun_rows,
    rerun_view,
)
from services.gateway.runs.stream import TERMINAL_STATUSES
from services.gateway.tasks import reads
from services.gateway.tasks.views import failure, task_view
from services.projector.kinds import WaitStatus

MAX_TASKS = 1000
Row = Mapping[str, Any]
"""A row by column name (an ``asyncpg.Record``)."""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


async def workflow_view(pool: asyncpg.Pool, workflow_id: str) -> dict[str, Any]:
    """Status, per-node state, tasks with attempts, output or error (and for a failed
    run its ``failure``: ``tasks.views.failure``), ``seq``, and what the node kinds add
    (``kind_view``: parent and children, waits and signals, the next
    wake-up, conditions, loop steps).

    Raises:
        Problem: 404 when the id is unknown.
    """
    async with pool.acquire() as conn:
        row = await conn.fetchrow("select * from workflows where workflow_id = $1", workflow_id)
        if row is None:
            raise Problem(404, "Not found", f"no workflow {workflow_id}")
        nodes = {r["node"]: r for r in await conn.fetch(
            "select * from nodes where workflow_id = $1", workflow_id)}
        by_status = await conn.fetch(
            "select node, status, count(*) as n, count(cached) as c from tasks"
            " where workflow_id = $1 group by node, status", workflow_id)
        counts = {(r["node"], r["status"]): r["n"] for r in by_status}
        hits: dict[str, int] = {}
        for r in by_status:
            hits[r["node"]] = hits.get(r["node"], 0) + r["c"]
        tasks = await conn.fetch(
            "select * from tasks where workflow_id = $1 order by node, idx nulls first limit $2",
            workflow_id, MAX_TASKS + 1)
        kinds = await kind_rows(conn, workflow_id)
        reruns = await rerun_rows(conn, workflow_id, row.get("rerun") is not None)
        failed_by = (await reads.failed_by(conn, workflow_id)
                     if row["status"] == WorkflowStatus.FAILED else (None, None))
        nondeterministic = (None if row["status"] in TERMINAL_STATUSES else _nondeterministic(
            await conn.fetchrow(NONDETERMINISTIC, workflow_id)))
    spec_nodes = (row["spec"] or {}).get("nodes", []) if isinstance(row["spec"], dict) else []
    spec_nodes = [n for n in spec_nodes if isinstance(n, dict) and isinstance(n.get("id"), str)]
    requires = requires_of(row["spec"])
    node_views = [node_view(spec_node, nodes.get(spec_node["id"]), counts, hits, kinds,
                            row["status"] in TERMINAL_STATUSES) for spec_node in spec_nodes]
    return {
        "id": workflow_id, "name": row["name"], "tenant": row["tenant"], "status": row["status"],
        "seq": row["seq"], "created_at": _iso(row["created_at"]),
        "updated_at": _iso(row["updated_at"]), "input": row["input"], "output": row["output"],
        "error": row["error"], "failure": failure(*failed_by),
        "definition": definition_of(row), "priority": priority_of(row["spec"]),
        "labels": row.get("labels") or {},
        "generation": row.get("generation") or 1, "deadline": _iso(row.get("deadline_at")),
        "paused": paused_view(row.get("paused"), row["status"]),
        "nodes": node_views,
        "tasks": [task_view(t, requires) for t in tasks[:MAX_TASKS]],
        "tasks_truncated": len(tasks) > MAX_TASKS,
        "nondeterministic": nondeterministic,
        **_warnings(tasks[:MAX_TASKS], nondeterministic, requires),
        **kind_view(workflow_id, row, spec_nodes, nodes, tasks[:MAX_TASKS], kinds),
        **rerun_view(row.get("rerun"), *reruns),
        "links": links(workflow_id),
    }


def node_view(spec_node: dict[str, Any], n: Row | None,
              counts: Mapping[tuple[str, str], int], hits: Mapping[str, int],
              kinds: KindRows, terminal: bool) -> dict[str, Any]:
    """A node as the run document's ``nodes[]`` show it: its kind, task, status (a node
    with no row yet is pending, or cancelled once the run ended), error, its tasks'
    counts by (node, status) (``held``: waiting for a permit or their cache), its cache
    hits by node (``cached``: of the succeeded, those a cache's hit succeeded) and what
    its kind adds (``node_extras``)."""
    node_id = spec_node["id"]
    status = n["status"] if n else (NodeStatus.CANCELLED if terminal else NodeStatus.PENDING)
    return {
        "id": node_id, "kind": spec_node.get("kind", "task"),
        "task": spec_node.get("task", spec_node.get("decide")),
        "status": status, "error": n["error"] if n else "",
        "total": n["total"] if n else None,
        "succeeded": counts.get((node_id, TaskStatus.SUCCEEDED), 0),
        "running": counts.get((node_id, TaskStatus.RUNNING), 0),
        "failed": counts.get((node_id, TaskStatus.FAILED), 0),
        "held": counts.get((node_id, TaskStatus.HELD), 0),
        "cached": hits.get(node_id, 0),
        **node_extras(spec_node, n, kinds),
    }


def _warnings(tasks: list[Row], nondeterministic: dict[str, Any] | None,
              requires: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """``{"warnings": [...]}``: attempts waiting on a queue no worker serves or running on
    a lost worker (``attempt_warnings``), and a code workflow parted from its history;
    ``{}`` without any."""
    warnings = attempt_warnings(tasks, requires).get("warnings", [])
    if nondeterministic is not None:
        warnings = [*warnings, nondeterministic["warning"]]
    return {"warnings": warnings} if warnings else {}


NONDETERMINISTIC = (
    "select node, idx, attempt, error, finished_at from tasks where workflow_id = $1"
    " and error_type = 'NondeterminismError' and status <> 'succeeded'"
    " order by idx desc limit 1")
"""A running code workflow's activation whose last attempt parted from the history."""


def _nondeterministic(row: Row | None) -> dict[str, Any] | None:
    """``{"node", "index", "attempt", "error", "at", "warning"}`` of a code workflow
    whose activation's code no longer decides as its history did (it is retried until
    such code is deployed), or None."""
    if row is None:
        return None
    where = f"{row['node']}[{row['idx']}] (attempt {row['attempt']})"
    return {"node": row["node"], "index": row["idx"], "attempt": row["attempt"],
            "error": row["error"], "at": _iso(row["finished_at"]),
            "warning": f"nondeterministic: {where}: {row['error']}; the run waits (not "
                       "failed) and retries it until code that decides as its history did "
                       "is deployed"}


MAX_KIND_ROWS = 1000
"""At most this many children, waits, signals (the latest) and loop steps in a view."""


@dataclass
class KindRows:
    """The node kinds' rows of one workflow (``kind_rows``), rows by column name.

    Attributes:
        children: ``workflows`` rows whose ``parent_id`` is the workflow.
        waits: ``waits`` rows by node.
        signals: ``signals`` rows, oldest first.
        steps: ``loop_steps`` rows by node, each with its tool's task row's ``status``,
            ``attempt`` and ``error`` as ``tool_status``, ``tool_attempt``, ``tool_error``.
    """

    children: list[Row] = field(default_factory=list)
    waits: dict[str, list[Row]] = field(default_factory=dict)
    signals: list[Row] = field(default_factory=list)
    steps: dict[str, list[Row]] = field(default_factory=dict)


def _by_node(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r["node"], []).append(r)
    return out


async def kind_rows(conn: asyncpg.Connection, workflow_id: str) -> KindRows:
    """Read the node kinds' rows of a workflow (at most ``MAX_KIND_ROWS`` of each)."""
    children = await conn.fetch(
        "select workflow_id, status, parent_node, parent_index, parent_attempt from workflows"
        " where parent_id = $1 order by parent_node, parent_index nulls first, parent_attempt"
        " limit $2", workflow_id, MAX_KIND_ROWS)
    waits = await conn.fetch(  # a code workflow's (idx null): its latest first
        "select * from waits where workflow_id = $1"
        " order by node, idx nulls first, started_at desc limit $2", workflow_id, MAX_KIND_ROWS)
    signals = await conn.fetch(
        "select * from signals where workflow_id = $1 order by seq desc limit $2",
        workflow_id, MAX_KIND_ROWS)
    steps = await conn.fetch(
        "select s.*, t.status as tool_status, t.attempt as tool_attempt, t.error as tool_error"
        " from loop_steps s left join tasks t on t.workflow_id = s.workflow_id"
        " and t.task_key = s.node || '[' || (2 * s.step + 1) || ']'"
        " where s.workflow_id = $1 order by s.node, s.step limit $2", workflow_id, MAX_KIND_ROWS)
    return KindRows(list(children), _by_node(list(waits)), list(reversed(signals)),
                    _by_node(list(steps)))


def kind_view(workflow_id: str, row: Row, spec_nodes: list[dict[str, Any]],
              nodes: Mapping[str, Row], tasks: list[Row], kinds: KindRows) -> dict[str, Any]:
    """What the node kinds add to a workflow's view (``GET /v1/workflows/{id}``).

    Args:
        workflow_id: the workflow.
        row: its ``workflows`` row.
        spec_nodes: its spec's node documents (each with a string ``id``).
        nodes: its ``nodes`` rows by node id.
        tasks: its ``tasks`` rows.
        kinds: its node kinds' rows.

    Returns:
        ``parent``: ``{"workflow_id", "node", "index", "attempt", "via", "links"}`` of
        the attempt that started it (``via``: ``"workflow"``, a workflow node's, or
        ``"call"``, a task's ``ctx.call``), or None. ``children``: ``[{"workflow_id",
        "node", "index", "attempt", "status", "via", "links"}]``, one per child workflow
        (attempt) it started and per run its tasks' ``ctx.call`` linked to it, by node,
        index and attempt (``status`` None: submitted, not accepted yet). ``waiting``:
        ``[{"node", "index", "signal", "since", "timeout_at"}]``, the waits open now.
        ``signals``: ``[{"name", "index", "signal_id", "status", "node", "reason",
        "fields", "at"}]``, the signals it recorded, oldest first (``status``
        ``received``: kept for a wait not started yet; ``consumed`` by ``node``;
        ``discarded`` for ``reason``). ``next_wakeup``: ``{"at", "node", "index",
        "reason"}`` of the earliest running sleep's wake-up (``reason`` ``"sleep"``) or
        open wait's timeout (``"wait timeout"``), or None. Times are ISO 8601 strings.
    """
    terminal = row["status"] in TERMINAL_STATUSES
    waiting = [] if terminal else [w for ws in kinds.waits.values() for w in ws
                                   if w["status"] == WaitStatus.WAITING]
    return {
        "parent": _parent(row),
        "children": _children(workflow_id, spec_nodes, tasks, kinds.children),
        "waiting": [{"node": w["node"], "index": w["idx"], "signal": w["signal"],
                     "since": _iso(w["started_at"]), "timeout_at": _iso(w["timeout_at"])}
                    for w in waiting],
        "signals": [{"name": s["name"], "index": s["idx"], "signal_id": s["signal_id"],
                     "status": s["status"], "node": s["node"] or None, "reason": s["reason"],
                     "fields": s["fields"], "at": _iso(s["at"])} for s in kinds.signals],
        "next_wakeup": None if terminal else _next_wakeup(nodes, waiting),
    }


def _parent(row: Row) -> dict[str, Any] | None:
    parent_id = row.get("parent_id")
    if not parent_id:
        return None
    node, index, attempt = row.get("parent_node"), row.get("parent_index"), row.get(
        "parent_attempt")
    return {"workflow_id": parent_id, "node": node, "index": index, "attempt": attempt,
            "via": _via(row["workflow_id"], parent_id, node, index, attempt),
            "links": links(parent_id)}


def _via(child: str, parent_id: str, node: Any, index: Any, attempt: Any) -> str:
    """How a child is linked to its parent: ``"workflow"``, a ``workflow`` node's child
    (its id is ``ids.child_id`` of that attempt), or ``"call"``, a run a task's
    ``ctx.call`` submitted (``headwater/core/calls.py``)."""
    if isinstance(node, str) and isinstance(attempt, int) and child == child_id(
            parent_id, node, index, attempt):
        return "workflow"
    return "call"


def _children(workflow_id: str, spec_nodes: list[dict[str, Any]], tasks: list[Row],
              rows: list[Row]) -> list[dict[str, Any]]:
    """The children's rows, and the children that live attempts of workflow nodes have
    submitted but whose acceptance is not projected yet."""
    found = {r["workflow_id"]: (r["parent_node"], r["parent_index"], r["parent_attempt"],
                                r["status"]) for r in rows}
    workflow_nodes = {n["id"] for n in spec_nodes if n.get("kind") == NodeKind.WORKFLOW}
    for t in tasks:
        if t["node"] in workflow_nodes and TaskStatus(t["status"]).live:
            found.setdefault(child_id(workflow_id, t["node"], t["idx"], t["attempt"]),
                             (t["node"], t["idx"], t["attempt"], None))
    ordered = sorted(found.items(), key=lambda kv: (kv[1][0], kv[1][1] if kv[1][1] is not None
                                                    else -1, kv[1][2]))
    return [{"workflow_id": cid, "node": node, "index": index, "attempt": attempt,
             "status": status, "via": _via(cid, workflow_id, node, index, attempt),
             "links": links(cid)}
            for cid, (node, index, attempt, status) in ordered]


def _next_wakeup(nodes: Mapping[str, Row], waiting: list[Row]) -> dict[str, Any] | None:
    due: list[tuple[datetime, str, int | None, str]] = [
        (w["timeout_at"], w["node"], w["idx"], "wait timeout") for w in waiting
        if w["timeout_at"] is not None]
    due += [(n["wake_at"], node_id, None, "sleep") for node_id, n in nodes.items()
            if n["status"] == NodeStatus.RUNNING and n.get("wake_at") is not None]
    if not due:
        return None
    at, node, index, reason = min(due, key=lambda d: d[0])
    return {"at": _iso(at), "node": node, "index": index, "reason": reason}


def node_extras(spec_node: dict[str, Any], n: Row | None, kinds: KindRows) -> dict[str, Any]:
    """What a node's kind adds to its view.

    Returns:
        ``condition`` (a node with ``when``: its value, None until evaluated); a wait:
        ``signal`` and ``waits`` (``[{"index", "status", "since", "timeout_at",
        "signal_id", "fields", "ended_at"}]``, ``status`` one of ``WaitStatus``); a
        sleep: ``wake_at``; a loop: ``steps`` (``[{"step", "decided_at", "tool",
        "input", "finish", "output", "spend", "tool_task"}]``, ``tool_task`` the tool
        call's ``{"key", "status", "attempt", "error"}`` or None) and ``spent`` (the
        steps' spend).
    """
    node_id, kind = spec_node["id"], spec_node.get("kind")
    extras: dict[str, Any] = {}
    if "when" in spec_node:
        extras["condition"] = n.get("condition") if n is not None else None
    if kind == NodeKind.WAIT:
        waits = kinds.waits.get(node_id, [])
        extras["signal"] = waits[0]["signal"] if waits else _signal_name(spec_node)
        extras["waits"] = [_wait_view(w) for w in waits]
    elif kind == NodeKind.SLEEP:
        extras["wake_at"] = _iso(n.get("wake_at")) if n is not None else None
    elif kind == NodeKind.LOOP:
        steps = kinds.steps.get(node_id, [])
        extras["steps"] = [_step_view(s) for s in steps]
        extras["spent"] = float(sum(s["spend"] for s in steps))
    return extras


def _signal_name(spec_node: dict[str, Any]) -> str | None:
    name = spec_node.get("signal")
    return name if isinstance(name, str) else None


def _wait_view(w: Row) -> dict[str, Any]:
    return {"index": w["idx"], "status": w["status"], "since": _iso(w["started_at"]),
            "timeout_at": _iso(w["timeout_at"]), "signal_id": w["signal_id"] or None,
            "fields": w["fields"], "ended_at": _iso(w["ended_at"])}


def _step_view(s: Row) -> dict[str, Any]:
    tool_task = None if s["finish"] or s["tool_status"] is None else {
        "key": task_key(s["node"], 2 * s["step"] + 1), "status": s["tool_status"],
        "attempt": s["tool_attempt"], "error": s["tool_error"]}
    return {"step": s["step"], "decided_at": _iso(s["decided_at"]), "tool": s["tool"] or None,
            "input": s["input"], "finish": s["finish"], "output": s["output"],
            "spend": s["spend"], "tool_task": tool_task}
