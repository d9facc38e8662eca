"""Pausing and resuming a run: the rules of ``PauseRequested`` and ``ResumeRequested``,
and what a paused run does instead of dispatching or firing a timer.

A pause records ``WorkflowPaused``; from then on an attempt that would be dispatched
(a task, a map item, a child workflow's submission, a code workflow's activation or
step, a loop's task) is recorded as ``DispatchDeferred`` and held (``dispatch.dispatch``
asks ``deferred_dispatch``); an attempt on a worker's queue that has not started is
recalled (``DispatchRecalled``: workers skip it, ``fencing.stops_for_recalled``) and
held with the next attempt (``pausing.recallable`` says which); and a durable timer in
``state.timers`` that comes due (a retry's, a sleep's, a wait's timeout, a schedule's)
is recorded as ``TimerDeferred``. Limiter permits and cache lookups go on (they
dispatch no work), but what they give an attempt that is then held for the resume is
given back at once (``Recorder.give_back``: a paused run holds no concurrency slot or
cache key), and the resume asks again. Every report is applied: an attempt running
when the run paused finishes and its result is applied, which may finish nodes and even
the run. A running attempt's deadline and lease are its own and still apply.

A resume records ``WorkflowResumed`` and then, in the order they were deferred, the
held attempts' dispatches (``TaskDispatched``) and the due timers' firings, each at the
resume's time but with its own deadline. Both requests are idempotent: a pause of a
paused run, a resume of a running one, or a request whose ``request_id`` the run
recorded for a request of its kind changes nothing and records nothing. A cancel ends
a paused run as any other (its held attempts are cancelled with the rest).
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core import pausing
from headwater.core.machine import dispatch, timers
from headwater.core.machine.recorder import Recorder
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus


def pause(rec: Recorder, state: WorkflowState, event: ev.PauseRequested) -> None:
    """Pause the run: record ``WorkflowPaused``, then recall each attempt on a worker's
    queue that has not started (``DispatchRecalled``, in task order, each after it gave
    back its permits and its cache: ``Recorder.give_back``), unless the run is paused
    already or recorded the request's id."""
    if state.paused or pausing.seen(state, event.request_id):
        return
    rec.record(ev.WorkflowPaused(state.workflow_id, event.at_ms, event.request_id,
                                 event.by, event.reason))
    current = rec.current
    recalled = [(t.node, t.index, t.attempt) for t in sorted(
        current.tasks.values(), key=lambda t: (t.node, t.index or 0))
        if pausing.recallable(current, t)]
    for node, index, attempt in recalled:
        rec.give_back(node, index, attempt)
        rec.record(ev.DispatchRecalled(state.workflow_id, node, index, attempt,
                                       event.at_ms))


def resume(rec: Recorder, state: WorkflowState, event: ev.ResumeRequested) -> None:
    """Resume a paused run: record ``WorkflowResumed``, then dispatch what it held and
    fire the timers that came due, in the order they were deferred. Nothing for a run
    that is not paused, a request whose id it recorded, or a definition's resume of a
    run its pause did not pause (``pausing.resumes``)."""
    if (not state.paused or pausing.seen(state, event.request_id, resume=True)
            or not pausing.resumes(state, event.by)):
        return
    deferred = list(pausing.pause_of(state)["deferred"])
    held = sum(1 for d in deferred if "task" in d)
    rec.record(ev.WorkflowResumed(state.workflow_id, event.at_ms, event.request_id,
                                  event.by, held, len(deferred) - held))
    for item in deferred:
        current = rec.current
        if current.status.terminal or current.paused:
            return
        if "timer" in item:
            timers.timer_fired(rec, current, ev.TimerFired(current.workflow_id,
                                                           item["timer"], rec.at_ms))
            continue
        task = current.tasks.get(item["task"])
        if (task is None or task.status is not TaskStatus.HELD
                or task.waiting_for != pausing.PAUSED):
            continue  # ended while paused (its node failed, say)
        spec = current.spec.node(task.node)  # it asks its cache and limits again
        dispatch.dispatch(rec, spec, task.index, task.attempt,
                          granted=task.limiters is not None, looked_up=bool(task.cache))


def timer_fired(rec: Recorder, state: WorkflowState, event: ev.TimerFired) -> None:
    """A durable timer of ``state.timers`` that comes due while the run is paused is
    recorded as ``TimerDeferred`` (it fires at the resume); any other firing (an
    attempt's deadline or lease, an early one) goes to ``timers.timer_fired``."""
    timer = state.timers.get(event.timer_id)
    if state.paused and timer is not None and event.at_ms >= timer.fire_at_ms:
        rec.record(ev.TimerDeferred(state.workflow_id, event.timer_id, timer.fire_at_ms,
                                    event.at_ms))
        return
    timers.timer_fired(rec, state, event)
