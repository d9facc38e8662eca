"""Timers: the retry timer a failed attempt schedules, and what a fired timer does.

A retry is a durable timer (``TimerScheduled``) that fires after the policy's backoff,
with jitter drawn from the dispatch id (docs/architecture.md, invariant 4), and
dispatches the next attempt. The deadline (``timeout`` after dispatch) and the lease
(``heartbeat_timeout`` after the last report of a running attempt) are not stored: the
coordinator arms them from the state (``state.task_timers``), and when one fires it is
checked against the state again, since a later report may have renewed the lease or
ended the attempt. An expired one fails the attempt like a worker's failure would.
A wait's timeout and a sleep's wake-up are node timers (``ids.node_timer_id``) kept in
``state.timers`` by ``WaitStarted`` and ``SleepStarted``, armed like retry timers; so is
a schedule's next fire time (``schedule:<node>``, by ``ScheduleArmed``).
"""

from __future__ import annotations

from collections.abc import Callable

from headwater.core import events as ev
from headwater.core.ids import (
    DEADLINE_TIMER,
    LEASE_TIMER,
    WAIT_TIMER,
    dispatch_id,
    parse_node_timer_id,
    parse_task_timer_id,
    retry_timer_id,
    task_key,
)
from headwater.core.machine import dispatch, reports, restart, schedule, sleep, wait
from headwater.core.machine.recorder import Recorder
from headwater.core.retry import backoff_seconds
from headwater.core.spec import NodeSpec
from headwater.core.spec_schedule import is_schedule_timer
from headwater.core.state import TaskState, WorkflowState
from headwater.core.status import TaskStatus


def schedule_retry(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """Record the timer that dispatches the attempt after ``report``'s, after its backoff."""
    did = dispatch_id(report.workflow_id, report.node, report.index, report.attempt)
    policy = rec.current.work(report.node, report.index).retry  # a loop's tool: its own
    tries = rec.current.tries(report.attempt)  # this generation's (``restart``)
    delay_ms = round(backoff_seconds(policy, tries, did) * 1000)
    rec.record(ev.TimerScheduled(
        workflow_id=report.workflow_id,
        timer_id=retry_timer_id(task_key(report.node, report.index), report.attempt + 1),
        fire_at_ms=report.at_ms + delay_ms,
        node=report.node, index=report.index, attempt=report.attempt + 1,
        at_ms=report.at_ms,
    ))


def timer_fired(rec: Recorder, state: WorkflowState, event: ev.TimerFired) -> None:
    """A retry timer that is due dispatches its attempt; a wait's timeout that is due
    fails the wait (``wait.timed_out``), a sleep's wakes it (``sleep.woke``), a
    schedule's fires its due fire times (``schedule.fired``); a deadline
    or lease that has really expired fails the attempt it was armed for; an early
    firing, or any other timer (one a signal dropped), changes nothing."""
    timer = state.timers.get(event.timer_id)
    if timer is not None:
        if event.at_ms < timer.fire_at_ms:
            return  # early (or forged): the timer loop fires it again when it is due
        rec.record(event)
        node_timer = parse_node_timer_id(event.timer_id)
        if is_schedule_timer(event.timer_id):
            schedule.fired(rec, state.spec.node(timer.node))
        elif node_timer is None:
            dispatch.dispatch(rec, state.spec.node(timer.node), timer.index, timer.attempt)
        elif node_timer[0] == WAIT_TIMER:
            wait.timed_out(rec, state.spec.node(timer.node), timer.index)
        else:
            sleep.woke(rec, state.spec.node(timer.node))
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
