"""Pausing every run of a definition: ``POST /v1/definitions/{name}/pause`` and
``/resume``.

A paused definition is a row of ``definition_pauses`` (the gateway's own: no record
fills it, a projection rebuild keeps it). While it is there, every run the gateway
submits from that definition (``POST /v1/workflows`` with ``definition``, ``POST
/v1/run/{name}``, a healed claim) carries ``paused_by: definition:<name>``, so the
coordinator records it paused right after its acceptance, before any dispatch. The
runs of it that are live when it is paused are paused one by one: a ``PauseRequested``
each, by ``definition:<name>``, from the projection's list of its live runs: those
running and those the gateway claimed but the coordinator has not accepted yet
(``runs.claims.CLAIMED``: submitted before the definition was paused, so not carrying
``paused_by``; a pause that overtakes its submission is deferred by the core). A
resume deletes the row and sends a resume by ``definition:<name>`` to every live run of
it not known to be paused by someone else: the core resumes only a run whose pause is
by ``definition:<name>`` (``pausing.resumes``; a run a user paused on its own stays
paused), so a run whose pause the projection has not shown yet is resumed too.
Both are idempotent (a second pause finds the row and pauses what the first missed: a
run submitted meanwhile, or one the projection did not show yet), so a sender may retry.
The schedules' runs of the definition are started by the coordinator, not the gateway:
they do not start paused (a schedule has its own pause, its ``pause`` signal).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg

from headwater.core import events as ev
from headwater.core.pausing import BY_DEFINITION
from headwater.core.status import WorkflowStatus
from services.common.auth.tokens import Principal
from services.common.clock import now_ms
from services.gateway.outlet import Outlet

SEND_AT_ONCE = 100
"""How many requests are produced together."""
LIVE = [str(WorkflowStatus.RUNNING), "accepted"]
"""The statuses of the runs a definition's pause pauses: running, or claimed and not
accepted yet (``runs.claims.CLAIMED``, which imports this module's package: spelled
here); such a run has not ended either."""


def by_definition(name: str) -> str:
    """The ``by`` of the pause of ``name``'s runs."""
    return f"{BY_DEFINITION}{name}"


async def paused_by(pool: Any, definition: str | None) -> str | None:
    """``definition:<name>`` when ``definition`` is paused (a run submitted from it starts
    paused); None otherwise, or for an inline spec."""
    if definition is None:
        return None
    found = await pool.fetchval("select 1 from definition_pauses where name = $1", definition)
    return by_definition(definition) if found else None


def pause_view(row: Any) -> dict[str, Any]:
    """A paused definition's ``paused`` (its ``definition_pauses`` row), in the shape of a
    run's: since when (ISO 8601), by whom (the subject that paused it), why."""
    return {"since": row["paused_at"].isoformat(), "by": row["paused_by"],
            "reason": row["reason"]}


async def pauses_of(pool: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """The ``paused`` of each of ``names`` that is paused (``pause_view``); a name not
    in it is not paused."""
    if not names:
        return {}
    rows = await pool.fetch("select name, paused_at, paused_by, reason from"
                            " definition_pauses where name = any($1::text[])", names)
    return {r["name"]: pause_view(r) for r in rows}


async def pause_definition(pool: asyncpg.Pool, out: Outlet, name: str, pause: bool,
                           me: Principal, reason: str = "") -> int:
    """Pause (``pause``) or resume a definition and its runs (see the module).

    Args:
        pool: the projection's pool.
        out: where the records go.
        name: a definition ``me`` may see (the route checked it).
        pause: pause, or resume.
        me: who asks: only its tenant's runs are touched (every run for a principal of
            every tenant).
        reason: a pause's, recorded in each run's history.

    Returns:
        How many runs a request was produced for.

    Raises:
        Problem: 503 Kafka unavailable or slow (the definition's row is written first: a
            retry sends the rest).
    """
    by = by_definition(name)
    tenant = None if me.every_tenant else me.tenant
    if pause:
        await pool.execute(
            "insert into definition_pauses (name, paused_at, paused_by, reason)"
            " values ($1, now(), $2, $3) on conflict (name) do nothing", name,
            me.subject, reason)
        rows = await pool.fetch(
            "select workflow_id from workflows where definition = $1"
            " and status = any($2::text[]) and paused is null"
            " and ($3::text is null or tenant = $3)", name, LIVE, tenant)
    else:
        await pool.execute("delete from definition_pauses where name = $1", name)
        rows = await pool.fetch(  # the core resumes only what the pause paused
            "select workflow_id from workflows where definition = $1"
            " and status = any($2::text[]) and (paused is null or paused->>'by' = $3)"
            " and ($4::text is null or tenant = $4)", name, LIVE, by, tenant)
    op = uuid.uuid4().hex
    records: list[ev.PauseRequested | ev.ResumeRequested] = [
        ev.PauseRequested(r["workflow_id"], now_ms(), f"{op}:{r['workflow_id']}", by, reason)
        if pause else ev.ResumeRequested(r["workflow_id"], now_ms(),
                                         f"{op}:{r['workflow_id']}", by)
        for r in rows]
    what = "pause" if pause else "resume"
    for start in range(0, len(records), SEND_AT_ONCE):
        await asyncio.gather(*(out.control(record, what)
                               for record in records[start:start + SEND_AT_ONCE]))
    return len(records)
