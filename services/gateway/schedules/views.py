"""The documents of ``GET /v1/schedules`` and ``GET /v1/schedules/{name}``: a schedule's
settings (from its live generation's spec) and its state (the ``schedules`` projection
table: paused, the next and last fire times, the last run, counts).

A generation just submitted has no ``schedules`` row until the coordinator has accepted
it: its document then shows its settings, ``paused: false``, no fire times and the
workflow's status (``accepted``).

A principal of one tenant reads only its tenant's schedules (the generation's
``workflows.tenant``): another tenant's is 404 as an unknown name and is not listed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

import asyncpg

from services.common.auth.tokens import OPEN, Principal
from services.gateway.runs.facts import priority_of
from services.gateway.schedules.generations import (
    Generation,
    generations,
    live,
    schedule_node,
    unknown,
)

RECENT_RUNS = 10
"""How many of a schedule's runs ``GET /v1/schedules/{name}`` lists, newest first."""
_STATE = ("paused", "next_fire_at", "last_fire_at", "last_run_id", "fired", "skipped",
          "created_at")


def links(name: str, workflow_id: str) -> dict[str, str]:
    """Hypermedia links of a schedule: itself, its generation's workflow (whose
    ``children`` are every run it started), its pause and resume."""
    return {"self": f"/v1/schedules/{quote(name, safe='')}",
            "workflow": f"/v1/workflows/{quote(workflow_id, safe='')}",
            "pause": f"/v1/schedules/{quote(name, safe='')}/pause",
            "resume": f"/v1/schedules/{quote(name, safe='')}/resume"}


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def document(name: str, generation: Generation, state: Any) -> dict[str, Any]:
    """A schedule's document.

    Args:
        name: the schedule's name.
        generation: its live generation.
        state: its ``schedules`` row, or None (not accepted yet).
    """
    node = schedule_node(generation.spec)
    doc: dict[str, Any] = {
        "name": name, "generation": generation.number,
        "workflow_id": generation.workflow_id,
        "status": state["status"] if state is not None else generation.status,
        "cron": node.get("cron"), "timezone": node.get("timezone", "UTC"),
        "definition": {"name": node.get("definition"),
                       "version": node.get("definition_version")},
        "input": node.get("input"), "priority": priority_of(node.get("workflow")),
        **{k: node.get(k) for k in ("overlap", "catchup", "catchup_max", "misfire_grace",
                                    "start_at")},
        "paused": False, "next_fire_at": None, "last_fire_at": None, "last_run_id": None,
        "fired": 0, "skipped": 0, "created_at": None,
        "links": links(name, generation.workflow_id)}
    if state is not None:
        doc.update({k: _iso(state[k]) for k in _STATE})
        doc["paused"] = bool(state["paused"])
    return doc


async def read_one(pool: asyncpg.Pool, name: str, me: Principal = OPEN) -> dict[str, Any]:
    """The document of the live generation of ``name``, with its recent runs
    (``runs``: ``{"workflow_id", "status", "created_at"}``, newest first).

    Raises:
        Problem: 404 no live generation (never put, or deleted) that ``me`` sees.
    """
    current = live(await generations(pool, name), me)
    if current is None:
        raise unknown(name)
    state = await pool.fetchrow(
        "select status, paused, next_fire_at, last_fire_at, last_run_id, fired, skipped,"
        " created_at from schedules where workflow_id = $1", current.workflow_id)
    runs = await pool.fetch(
        "select workflow_id, status, created_at from workflows where parent_id = $1"
        " order by created_at desc, workflow_id desc limit $2", current.workflow_id,
        RECENT_RUNS)
    doc = document(name, current, state)
    doc["runs"] = [{"workflow_id": r["workflow_id"], "status": r["status"],
                    "created_at": _iso(r["created_at"])} for r in runs]
    return doc


async def read_list(pool: asyncpg.Pool, limit: int, cursor: str | None,
                    me: Principal = OPEN) -> dict[str, Any]:
    """The live schedules by name (``{"items", "next_cursor"}``), after ``cursor`` (a
    name), those of ``me``'s tenant (all of them for a principal of every tenant).

    A schedule is listed once the coordinator has accepted its generation (its
    ``schedules`` row), while that row's status is ``running``.
    """
    rows = await pool.fetch(
        "select distinct on (s.name) s.name, s.workflow_id, s.status, s.paused,"
        " s.next_fire_at, s.last_fire_at, s.last_run_id, s.fired, s.skipped, s.created_at,"
        " w.spec, w.tenant from schedules s join workflows w on w.workflow_id = s.workflow_id"
        " where s.status = 'running' and ($1::text is null or s.name > $1)"
        " and ($3::text is null or w.tenant = $3)"
        " order by s.name, s.created_at desc limit $2", cursor, limit + 1,
        None if me.every_tenant else me.tenant)
    items = []
    for row in rows[:limit]:
        number = row["workflow_id"].rsplit(":", 1)[-1]
        generation = Generation(int(number) if number.isdigit() else 0, row["workflow_id"],
                                row["status"], row["spec"], row["tenant"])
        items.append(document(row["name"], generation, row))
    return {"items": items,
            "next_cursor": rows[limit - 1]["name"] if len(rows) > limit else None}
