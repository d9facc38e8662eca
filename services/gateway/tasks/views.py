"""Documents of a run's tasks from projection rows and history events: one task with its
attempts, a task as a run's document and a node's page list it, and the attempt that
failed a run. Pure: the rows are
read by ``reads.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from headwater.core.ids import task_key
from services.gateway.edge.problems import Problem
from services.gateway.queues.marks import attempt_marks

Row = Mapping[str, Any]
"""A row by column name (an ``asyncpg.Record``)."""
NO_INDEX = "-"
"""The ``{index}`` of a task of a node without index (a plain task node)."""
ATTEMPT_EVENTS = ("TaskDispatched", "TaskStarted", "TaskSucceeded", "TaskCached",
                  "TaskFailed", "TaskCancelled")
"""The history events an attempt's view is made of."""
_ENDS = {"TaskSucceeded": "succeeded", "TaskCached": "succeeded", "TaskFailed": "failed",
         "TaskCancelled": "cancelled"}
_SUCCESSES = ("TaskSucceeded", "TaskCached")
"""A success: a worker's, or a cache's hit (the output another attempt computed)."""


def parse_index(raw: str) -> int | None:
    """The task index of an ``{index}`` path segment: ``-`` (None) or an integer >= 0.

    Raises:
        Problem: 422 for anything else.
    """
    if raw == NO_INDEX:
        return None
    if raw.isascii() and raw.isdigit() and len(raw) <= 9:
        return int(raw)
    fault = f"index: {raw!r} is neither a task index (an integer >= 0) nor '-' (no index)"
    raise Problem(422, "Invalid request", fault, errors=[fault])


def task_path(workflow_id: str, node: str, index: int | None) -> str:
    """``/v1/workflows/{id}/tasks/{node}/{index}`` of a task."""
    segment = NO_INDEX if index is None else str(index)
    return f"/v1/workflows/{workflow_id}/tasks/{node}/{segment}"


def task_links(workflow_id: str, node: str, index: int | None) -> dict[str, str]:
    """A task's links: itself and its logs."""
    path = task_path(workflow_id, node, index)
    return {"self": path, "logs": f"{path}/logs"}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def attempts(events: Sequence[Row]) -> list[dict[str, Any]]:
    """One task's attempts, from its history events in seq order.

    Args:
        events: ``events`` rows (``type``, ``at``, ``data``) of ``ATTEMPT_EVENTS`` for the
            task, oldest first.

    Returns:
        ``[{"attempt", "status", "worker", "dispatched_at", "started_at", "finished_at",
        "error", "error_type", "traceback"}]`` by attempt number; ``status`` is
        ``dispatched``, ``running``, ``succeeded``, ``failed`` or ``cancelled``. An
        attempt that failed before any dispatch (a map item whose input could not be
        resolved) has ``dispatched_at`` null; one a cache's hit succeeded (never
        dispatched) has ``cached``, the attempt whose output it took (``TaskCached``'s
        source).
    """
    found: dict[int, dict[str, Any]] = {}
    for e in events:
        data, kind = e["data"], e["type"]
        number = int(data.get("attempt") or 0)
        one = found.setdefault(number, {
            "attempt": number, "status": "dispatched", "worker": "", "dispatched_at": None,
            "started_at": None, "finished_at": None, "error": "", "error_type": "",
            "traceback": ""})
        at = _iso(e["at"])
        if kind == "TaskDispatched":
            one["dispatched_at"] = at
        elif kind == "TaskStarted":
            one.update(status="running", worker=data.get("worker") or "", started_at=at)
        elif kind in _ENDS:
            one.update(status=_ENDS[kind], finished_at=at)
            if kind == "TaskFailed":
                one.update(error=data.get("error") or "", error_type=data.get("error_type") or "",
                           traceback=data.get("traceback") or "")
            elif kind == "TaskCancelled":
                one["error"] = data.get("reason") or ""
            elif kind == "TaskCached":
                one["cached"] = data.get("source")
    return [found[n] for n in sorted(found)]


def task_document(workflow_id: str, row: Row, events: Sequence[Row]) -> dict[str, Any]:
    """``GET /v1/workflows/{id}/tasks/{node}/{index}``: a task and every attempt of it.

    Args:
        workflow_id: the run.
        row: the task's ``tasks`` row.
        events: its attempts' history events, oldest first (``attempts``).

    Returns:
        ``{"workflow_id", "node", "index", "key", "task", "queue", "status", "attempt",
        "input", "output", "attempts", "links"}``: ``input`` is its latest dispatch's,
        ``output`` its success's (a worker's, or a cache's hit's; null until then).
    """
    dispatched = [e["data"] for e in events if e["type"] == "TaskDispatched"]
    succeeded = [e["data"] for e in events if e["type"] in _SUCCESSES]
    node, index = row["node"], row["idx"]
    return {
        "workflow_id": workflow_id, "node": node, "index": index,
        "key": task_key(node, index), "task": row["task"], "queue": row["queue"],
        "status": row["status"], "attempt": row["attempt"],
        "input": dispatched[-1].get("input") if dispatched else None,
        "output": succeeded[-1].get("output") if succeeded else None,
        "attempts": attempts(events), "links": task_links(workflow_id, node, index)}


def failure(node_failed: Row | None, task_failed: Row | None) -> dict[str, Any] | None:
    """The run document's ``failure``: what failed a run.

    Args:
        node_failed: the data of the run's last ``NodeFinished`` with status ``failed``,
            or None (the run failed before any node did: an invalid submission).
        task_failed: the data of that node's last ``TaskFailed`` before it, or None
            (the node failed without an attempt failing: an input that could not be
            resolved, a wait's timeout).

    Returns:
        ``{"node", "index", "attempt", "error_type", "message", "traceback"}``, the
        attempt's failure (``index`` and ``attempt`` null and ``message`` the node's error
        when no attempt failed it); None without a failed node.
    """
    if node_failed is None:
        return None
    if task_failed is None:
        return {"node": node_failed.get("node"), "index": None, "attempt": None,
                "error_type": "", "message": node_failed.get("error") or "", "traceback": ""}
    return {"node": task_failed.get("node"), "index": task_failed.get("index"),
            "attempt": task_failed.get("attempt"),
            "error_type": task_failed.get("error_type") or "",
            "message": task_failed.get("error") or "",
            "traceback": task_failed.get("traceback") or ""}


def task_view(t: Row, requires: Mapping[str, tuple[str, ...]] | None = None,
              ) -> dict[str, Any]:
    """A ``tasks`` row as the run document's ``tasks[]`` (and a node's page of tasks)
    show it: its latest attempt, with that attempt's error type and traceback, and its
    marks (``requires``: node id -> the tags the node requires)."""
    return {
        "key": t["task_key"], "node": t["node"], "index": t["idx"], "attempt": t["attempt"],
        "status": t["status"], "task": t["task"], "queue": t["queue"],
        "progress": t["progress"], "message": t["message"], "error": t["error"],
        "error_type": t["error_type"], "traceback": t["traceback"],
        "worker": t["worker"], "dispatched_at": _iso(t["dispatched_at"]),
        "started_at": _iso(t["started_at"]), "finished_at": _iso(t["finished_at"]),
        **_cached(t),  # a cache's hit: its source (§4o)
        **attempt_marks(t, (requires or {}).get(t["node"], ())),  # queues.marks
    }


def _cached(t: Row) -> dict[str, Any]:
    """``{"cached": {run, node, index, attempt, cache, saved_ms, units}}`` for an attempt
    a cache's hit succeeded (``TaskCached``), else nothing."""
    try:
        cached = t["cached"]
    except KeyError:  # a row read before the column existed
        return {}
    return {"cached": cached} if cached is not None else {}
