"""Producing a pause or a resume for one run: to ``control``, keyed by the run's id,
for a run the projection knows and that has not ended."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from headwater.core import events as ev
from services.common.auth.tokens import Principal
from services.common.clock import now_ms
from services.gateway.edge.problems import Problem
from services.gateway.outlet import Outlet
from services.gateway.runs.stream import TERMINAL_STATUSES

PAUSE_REQUESTED = "pause_requested"
"""The status a pause request is answered with (the run's own changes when the
coordinator applies it: its ``paused``)."""
RESUME_REQUESTED = "resume_requested"
"""The status a resume request is answered with."""


def who(me: Principal) -> str:
    """Who asked, as the history records it (``by``): the principal's subject, or its
    tenant when it has none (auth off: ``""``)."""
    return me.subject or ("" if me.every_tenant else me.tenant)


def pause_record(workflow_id: str, pause: bool, by: str, reason: str = "",
                 request_id: str | None = None) -> ev.PauseRequested | ev.ResumeRequested:
    """The record of a pause (``pause``) or a resume of ``workflow_id``; without a
    ``request_id`` it gets a random one (UUID4, hex)."""
    rid = request_id or uuid.uuid4().hex
    if pause:
        return ev.PauseRequested(workflow_id, now_ms(), rid, by, reason)
    return ev.ResumeRequested(workflow_id, now_ms(), rid, by)


async def request_pause(pool: asyncpg.Pool, out: Outlet,
                        record: ev.PauseRequested | ev.ResumeRequested,
                        ) -> dict[str, Any] | None:
    """Produce a pause or a resume for a run that has not ended.

    A pause of a paused run, or a resume of a running one, is produced all the same (the
    projection may lag behind a request just sent): the coordinator records nothing for
    it.

    Args:
        pool: the projection's pool.
        out: where the record goes (``outlet.Outlet``).
        record: the request (``pause_record``).

    Returns:
        The run's ``paused`` as the projection has it before this request (None: not
        paused).

    Raises:
        Problem: 404 unknown id, 409 the run has ended, 503 Kafka unavailable or slow.
    """
    wid = record.workflow_id
    row = await pool.fetchrow("select status, paused from workflows where workflow_id = $1",
                              wid)
    if row is None:
        raise Problem(404, "Not found", f"no workflow {wid}")
    what = "paused" if isinstance(record, ev.PauseRequested) else "resumed"
    if row["status"] in TERMINAL_STATUSES:
        raise Problem(409, "Conflict", f"workflow {wid} has already ended ({row['status']}) "
                      f"and cannot be {what}", status_now=row["status"])
    await out.control(record, "pause" if what == "paused" else "resume")
    paused: dict[str, Any] | None = row.get("paused")
    return paused
