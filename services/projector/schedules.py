"""What a schedule's history writes to the PostgreSQL projection: its ``schedules`` row
(the table is in ``services/common/db.py``), which ``GET /v1/schedules`` reads.

``schedule_plan`` gives an event's statements after the node kinds' (``kinds.py``):

- ``WorkflowAccepted`` of a spec with a ``schedule`` node inserts the row: the name
  (the spec's, without ``schedule:``), cron, time zone, definition and version, overlap
  and catch-up policies, ``running``, created at the acceptance.
- ``ScheduleArmed`` sets ``next_fire_at`` (and the node's ``nodes`` row is running);
  ``ScheduleFired`` counts the fire time in ``fired`` (started) or ``skipped``, and sets
  ``last_fire_at`` (and ``last_run_id`` for a started one); ``SchedulePaused`` /
  ``ScheduleResumed`` set ``paused``.
- The workflow's end sets ``status`` to it (``cancelled`` for a deleted schedule) and
  clears ``next_fire_at``.

Each update is guarded by the seq of the last event applied to its part (``armed_seq``,
``fired_seq``, ``paused_seq``): a batch applies one statement at a time for all its
events (``writer._project_grouped``), so one guard for the row would let an arming
with a later seq hide a firing recorded before it. The acceptance inserts only once
(its values never change) and the end is final, so one batch, many batches and
duplicates give the same row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.kinds.schedule.rules import STARTED
from headwater.core.status import NodeStatus
from services.projector.statements import TERMINAL, UPSERT_NODE, Statements, ts

PREFIX = "schedule:"
"""A schedule workflow's spec name starts with it; the row's ``name`` is the rest."""

INSERT_SCHEDULE = (
    "insert into schedules (workflow_id, name, cron, timezone, definition,"
    " definition_version, overlap, catchup, created_at)"
    " values ($1, $2, $3, $4, $5, $6, $7, $8, $9) on conflict (workflow_id) do nothing")
SCHEDULE_ARMED = (
    "update schedules set next_fire_at = $3, armed_seq = $2"
    " where workflow_id = $1 and armed_seq < $2 and status = 'running'")
SCHEDULE_FIRED = (
    "update schedules set last_fire_at = greatest(last_fire_at, $3),"
    " last_run_id = coalesce($4, last_run_id), fired = fired + $5, skipped = skipped + $6,"
    " fired_seq = $2 where workflow_id = $1 and fired_seq < $2")
SCHEDULE_PAUSED = (
    "update schedules set paused = $3, paused_seq = $2"
    " where workflow_id = $1 and paused_seq < $2")
SCHEDULE_ENDED = (
    "update schedules set status = $2, next_fire_at = null"
    " where workflow_id = $1 and status = 'running'")
SCHEDULE_STATEMENTS = (INSERT_SCHEDULE, SCHEDULE_ARMED, SCHEDULE_FIRED, SCHEDULE_PAUSED,
                       SCHEDULE_ENDED)
"""The schedules' statements, in the order a batch applies them (the row first)."""


def schedule_node(spec: Any) -> Mapping[str, Any] | None:
    """The ``schedule`` node of a spec document (as accepted), or None."""
    nodes = spec.get("nodes") if isinstance(spec, Mapping) else None
    for node in nodes if isinstance(nodes, list) else ():
        if isinstance(node, Mapping) and node.get("kind") == "schedule":
            return node
    return None


def _accepted(e: ev.HistoryEvent, b: ev.WorkflowAccepted) -> Statements:
    node = schedule_node(b.spec)
    if node is None:
        return []
    name = str(b.spec.get("name", ""))
    name = name[len(PREFIX):] if name.startswith(PREFIX) else name
    version = node.get("definition_version")
    definition = node.get("definition")
    return [(INSERT_SCHEDULE, (
        e.workflow_id, name, str(node.get("cron", "")), str(node.get("timezone", "UTC")),
        str(definition).split("@")[0] if isinstance(definition, str) else None,
        version if type(version) is int else None, str(node.get("overlap", "skip")),
        str(node.get("catchup", "none")), ts(b.at_ms)))]


def _fired(wid: str, seq: int, b: ev.ScheduleFired) -> Statements:
    started = b.outcome == STARTED
    return [(SCHEDULE_FIRED, (wid, seq, ts(b.fire_ms), b.run_id, int(started),
                              int(not started)))]


SCHEDULE_STEPS: dict[type, Callable[[str, int, Any], Statements]] = {
    ev.ScheduleArmed: lambda wid, seq, b: [
        (UPSERT_NODE, (wid, b.node, NodeStatus.RUNNING.value, None, "", seq)),
        (SCHEDULE_ARMED, (wid, seq, ts(b.fire_ms)))],
    ev.ScheduleFired: _fired,
    ev.SchedulePaused: lambda wid, seq, b: [(SCHEDULE_PAUSED, (wid, seq, True))],
    ev.ScheduleResumed: lambda wid, seq, b: [(SCHEDULE_PAUSED, (wid, seq, False))],
}
"""A schedule's event type -> its statements (workflow id, seq, body)."""


def schedule_plan(e: ev.HistoryEvent) -> Statements:
    """The statements that project one event to ``schedules`` (none for most)."""
    b, wid, seq = e.body, e.workflow_id, e.seq
    if isinstance(b, ev.WorkflowAccepted):
        return _accepted(e, b)
    steps = SCHEDULE_STEPS.get(type(b))
    if steps is not None:
        return steps(wid, seq, b)
    if type(b) in TERMINAL:
        return [(SCHEDULE_ENDED, (wid, TERMINAL[type(b)].value))]
    return []
