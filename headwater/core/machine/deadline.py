"""The run's deadline in the machine: armed at acceptance, checked at the start, fired.

``arm`` records ``DeadlineSet`` for a spec with a ``deadline`` (right after its
acceptance, so a replay folds the same instant whatever the clock says then);
``passed_at_start`` fails a run whose deadline has passed before any node starts; and
``fired`` fails a running run when the coordinator's timer (``RUN_DEADLINE_TIMER``,
armed from ``WorkflowState.deadline_at_ms``) fires at or after the deadline: every
unfinished attempt and node is cancelled, then ``WorkflowFailed`` names
``DeadlineExceeded`` and the instant (``headwater/core/deadline.py``). An early firing
changes nothing (the timer loop fires it again when it is due).
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.deadline import exceeded_error
from headwater.core.machine import ending
from headwater.core.machine.recorder import Recorder
from headwater.core.state import WorkflowState


def arm(rec: Recorder) -> None:
    """Record the just-accepted run's ``DeadlineSet`` when its valid spec gives one."""
    state = rec.current
    if state.spec_error or state.spec.deadline is None:
        return
    due = state.spec.deadline.due_ms(state.created_at_ms)
    rec.record(ev.DeadlineSet(state.workflow_id, due, rec.at_ms))


def passed_at_start(rec: Recorder) -> bool:
    """Fail a just-accepted run whose deadline has passed already (an instant in the
    past), before any node starts: True when it did."""
    state = rec.current
    if state.status.terminal or state.deadline_at_ms is None or rec.at_ms < state.deadline_at_ms:
        return False
    _exceed(rec, state)
    return True


def fired(rec: Recorder, state: WorkflowState, event: ev.TimerFired) -> None:
    """The run's deadline timer fired: fail the run if the deadline has passed by the
    firing's time; nothing for an early firing, or a run without a deadline."""
    if state.deadline_at_ms is None or event.at_ms < state.deadline_at_ms:
        return
    rec.record(event)
    _exceed(rec, state)


def _exceed(rec: Recorder, state: WorkflowState) -> None:
    assert state.deadline_at_ms is not None
    error = exceeded_error(state.deadline_at_ms, state.created_at_ms)
    ending.end_workflow(rec, ev.WorkflowFailed(state.workflow_id, rec.at_ms, error), error)
