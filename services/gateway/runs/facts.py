"""What a run's ``workflows`` row says of it beyond its nodes, in the shape its documents
show: its links, the definition it ran from, its pause, its priority, and how it is tied
to reruns. The run document (``runs.views``) and a listing's item (``runs.listing``)
both carry these, and the other resources name a run by its ``links``, so they live here
rather than in either view.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from headwater.core.priority import DEFAULT as DEFAULT_PRIORITY
from headwater.core.priority import KEY as PRIORITY_KEY
from headwater.core.priority import as_number, priority_fault

Row = Mapping[str, Any]
"""A row by column name (an ``asyncpg.Record``)."""


def links(workflow_id: str) -> dict[str, str]:
    """Hypermedia links of a workflow."""
    base = f"/v1/workflows/{workflow_id}"
    return {"self": base, "events": f"{base}/events"}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def priority_of(spec: Any) -> int:
    """A run's priority, 0-9, as its recorded spec gives it (``core.priority``): the
    default for a spec without one (or one the core would refuse, which never runs)."""
    raw = spec.get(PRIORITY_KEY) if isinstance(spec, dict) else None
    return DEFAULT_PRIORITY if raw is None or priority_fault(raw) else as_number(raw)


MAX_RERUNS = 100
"""At most this many reruns of a run are listed in its view (the oldest)."""


async def rerun_rows(conn: Any, workflow_id: str, is_rerun: bool,
                     ) -> tuple[list[str], list[tuple[str, str, int]]]:
    """The runs that rerun ``workflow_id`` (oldest first, ``MAX_RERUNS`` at most), and,
    when it is a rerun, what it took: ``(type, node, count)`` of its ``NodeReused`` and
    ``TaskReused`` events."""
    reruns = await conn.fetch(
        "select workflow_id from workflows where rerun->>'of' = $1 order by created_at"
        " limit $2", workflow_id, MAX_RERUNS)
    taken = [] if not is_rerun else await conn.fetch(
        "select type, data->>'node' as node, count(*) as n from events where"
        " workflow_id = $1 and type in ('NodeReused', 'TaskReused') group by 1, 2",
        workflow_id)
    return ([r["workflow_id"] for r in reruns],
            [(r["type"], r["node"], r["n"]) for r in taken])


def rerun_view(document: Any, reruns: list[str],
               taken: list[tuple[str, str, int]]) -> dict[str, Any]:
    """How a run is linked to reruns, both ways: ``rerun_of`` (the run it reruns, or
    null), ``reset`` (a reset's node), ``reused`` (what it took from its source so far:
    the nodes, and per fanned-out node how many items, from its ``NodeReused`` and
    ``TaskReused`` events, ``taken``: ``(type, node, count)``; null for a run of its
    own) and ``reruns`` (the runs that rerun it, oldest first)."""
    doc = document if isinstance(document, dict) else {}
    return {"rerun_of": doc.get("of"), "reset": doc.get("reset"),
            "reused": None if not doc else {
                "nodes": sorted(node for kind, node, _ in taken if kind == "NodeReused"),
                "items": {node: n for kind, node, n in sorted(taken) if kind == "TaskReused"}},
            "reruns": reruns}


TERMINAL = ("succeeded", "failed", "cancelled")
"""The statuses of a run that has ended: it is not paused, whatever its history says."""


def paused_view(paused: Any, status: str) -> dict[str, Any] | None:
    """A paused run's ``paused`` (``workflows.paused``, ``projector/pauses.py``): since
    when (ISO 8601), by whom, why; None when it is not paused, or has ended (a run
    cancelled or failed while paused stays paused in its history)."""
    if not isinstance(paused, dict) or status in TERMINAL:
        return None
    since = paused.get("since")
    return {"since": _iso(datetime.fromtimestamp(since / 1000, tz=UTC))
            if isinstance(since, int | float) else None,
            "by": str(paused.get("by") or ""), "reason": str(paused.get("reason") or "")}


def definition_of(row: Row) -> dict[str, Any] | None:
    """``{"name", "version"}`` of the registered definition a ``workflows`` row's run was
    resolved from, or None for an inline spec."""
    name = row.get("definition")
    return None if name is None else {"name": name, "version": row.get("definition_version")}
