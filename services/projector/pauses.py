"""What pausing a run writes to the PostgreSQL projection (``headwater/core/machine/
pause.py``).

The ``workflows`` row's ``paused`` is ``{"since": ms, "by", "reason"}`` while the run
is paused, null otherwise; ``paused_seq`` is the seq of the pause or resume that set it,
so that a batch, many, or a replay give the same row whatever the order. A held
attempt's row (``DispatchDeferred``) is ``held`` with the message ``held: the run is
paused``, as a limiter's held attempt is, and so is a recalled one's
(``DispatchRecalled``), under its next attempt; its dispatch at the resume makes it
``dispatched``. A timer that came due while paused (``TimerDeferred``) writes only its
``events`` row.
"""

from __future__ import annotations

from headwater.core import events as ev
from services.projector.statements import Statements

SET_PAUSED = (
    "update workflows set paused = $2, paused_seq = $3 where workflow_id = $1"
    " and paused_seq < $3")
PAUSE_STATEMENTS = (SET_PAUSED,)
"""The pause's own statements, in the order a batch applies them."""
PAUSE_EVENTS = frozenset({ev.WorkflowPaused, ev.WorkflowResumed, ev.TimerDeferred})
"""The pause's events with a plan here (``DispatchDeferred``'s task row is a core
statement, ``statements.NODE_AND_TASK_STEPS``)."""
HELD_WHILE_PAUSED = "held: the run is paused"
"""The message of an attempt held by its run's pause (its task row)."""


def pause_plan(e: ev.HistoryEvent) -> Statements:
    """The statements that project a pause or a resume (none for any other event)."""
    b = e.body
    if isinstance(b, ev.WorkflowPaused):
        return [(SET_PAUSED, (e.workflow_id, {"since": b.at_ms, "by": b.by,
                                              "reason": b.reason}, e.seq))]
    if isinstance(b, ev.WorkflowResumed):
        return [(SET_PAUSED, (e.workflow_id, None, e.seq))]
    return []
