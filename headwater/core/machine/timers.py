"""Timers: what a fired timer does.

A retry timer (``dispatch.schedule_retry``) dispatches the next attempt. The deadline
(``timeout`` after dispatch) and the lease (``heartbeat_timeout`` after the last report
of a running attempt) are not stored: the
coordinator arms them from the state (``state.task_timers``), and when one fires it is
checked against the state again, since a later report may have renewed the lease or
ended the attempt. An expired one fails the attempt like a worker's failure would.
A node's own timer (a wait's timeout, a sleep's wake-up, a schedule's next fire time) is
kept in ``state.timers`` by its kind's event and armed like a retry timer; its prefix
names the kind that owns it (``registry.timer_owner``). The run's own deadline
(``RUN_DEADLINE_TIMER``, armed from ``state.deadline_at_ms``) goes to
``machine/deadline.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from headwater.core import events as ev
from headwater.core import registry
from headwater.core.deadline import RUN_DEADLINE_TIMER
from headwater.core.ids import DEADLINE_TIMER, LEASE_TIMER, parse_task_timer_id
from headwater.core.machine import deadline, dispatch, reports, restart
from headwater.core.machine.recorder import Recorder
from headwater.core.spec import NodeSpec
from headwater.core.state import TaskState, WorkflowState
from headwater.core.status import TaskStatus


def timer_fired(rec: Recorder, state: WorkflowState, event: ev.TimerFired) -> None:
    """A retry timer that is due dispatches its attempt; a node's own timer that is due
    goes to its kind (``KindUnit.timer_fired``: a wait's timeout fails the wait, a
    sleep's wakes it, a schedule's fires its due fire times); a deadline
    or lease that has really expired fails the attempt it was armed for; an early
    firing, or any other timer (one a signal dropped), changes nothing. The run's own
    deadline (``RUN_DEADLINE_TIMER``) fails the run (``machine/deadline.py``)."""
    rule = deadline.fired if event.timer_id == RUN_DEADLINE_TIMER else _node_or_task_timer
    rule(rec, state, event)


def _node_or_task_timer(rec: Recorder, state: WorkflowState, event: ev.TimerFired) -> None:
    timer = state.timers.get(event.timer_id)
    if timer is not None:
        if event.at_ms < timer.fire_at_ms:
            return  # early (or forged): the timer loop fires it again when it is due
        rec.record(event)
        spec = state.spec.node(timer.node)
        owner = registry.timer_owner(event.timer_id)
        if owner is not None and owner.timer_fired is not None:
            owner.timer_fired(rec, spec, timer.index)
        else:
            dispatch.dispatch(rec, spec, timer.index, timer.attempt)
        return
    parsed = parse_task_timer_id(event.timer_id)
    if parsed is None:
        return
    kind, key, attempt = parsed
    task = state.tasks.get(key)
    if task is None or task.attempt != attempt or not task.status.live:
        return
    expired = _EXPIRED[kind](task, state.spec.node(task.node), event.at_ms)
    if expired is None:
        return
    error_type, error = expired
    rec.record(event)
    if kind == LEASE_TIMER and restart.restarts_left(state):
        restart.restart(rec, task, error)
        return
    reports.attempt_failed(rec, ev.TaskFailed(state.workflow_id, task.node, task.index,
                                              attempt, event.at_ms, error, error_type, True))


Expiry = tuple[str, str]
"""Why an attempt ended when its timer fired: ``(error type, error message)``."""


def _deadline_passed(task: TaskState, spec: NodeSpec, now_ms: int) -> Expiry | None:
    if task.deadline_ms is None or now_ms < task.deadline_ms:
        return None
    timeout_s = (task.deadline_ms - task.dispatched_at_ms) / 1000  # the task's own timeout
    return "TimeoutError", f"timed out: no outcome {timeout_s:g} s after dispatch"


def _lease_expired(task: TaskState, spec: NodeSpec, now_ms: int) -> Expiry | None:
    if (task.status is not TaskStatus.RUNNING or task.heartbeat_ms is None
            or task.last_seen_ms is None or now_ms < task.last_seen_ms + task.heartbeat_ms):
        return None
    return "HeartbeatTimeout", (f"lost: no heartbeat from worker {task.worker or '(unknown)'}"
                                f" for {task.heartbeat_ms / 1000:g} s")


_EXPIRED: dict[str, Callable[[TaskState, NodeSpec, int], Expiry | None]] = {
    DEADLINE_TIMER: _deadline_passed,
    LEASE_TIMER: _lease_expired,
}
"""Task timer kind -> whether it has expired for the attempt, and how that reads."""
