"""How pausing a run changes its state (the ``evolve`` handlers of the pause's history
events, ``headwater/core/events/pause.py``), read by the machine's rules
(``headwater/core/machine/pause.py``).

The run's pause is ``WorkflowState.pause``: whether it is paused, since when, by whom
and why, what it deferred in the order it would have happened (``{"task": key}`` for an
attempt it holds, ``{"timer": id, "fire_at_ms", "node", "index", "attempt"}`` for a
durable timer that came due, with its own deadline) and the request ids it recorded (a
copy of a request changes nothing). A held attempt is a task in ``TaskStatus.HELD``
waiting for ``PAUSED``, so everything that ends a task ends it (a cancel:
``TaskCancelled``) and it keeps its map item's slot; an attempt on a worker's queue and
not started when the run paused is recalled (``DispatchRecalled``): its task is held
with the next attempt, and its reports are stale; a timer that came due leaves
``state.timers`` (nothing arms it while the run is paused) and goes back at the resume,
whose rule fires it.
"""

from __future__ import annotations

from typing import Any

from headwater.core import attempts
from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.spec import NodeKind
from headwater.core.state import IllegalTransition, TaskState, TimerState, WorkflowState
from headwater.core.status import TaskStatus
from headwater.core.work import CHILD_TASK, task_work

PAUSED = "(paused)"
"""What a held attempt waits for while its run is paused (``TaskState.waiting_for``);
no limiter or cache has this id (theirs are ``limit::...`` and ``cache::...``)."""
BY_DEFINITION = "definition:"
"""The ``by`` of a pause a paused definition sent its runs (``definition:<name>``): a
resume by ``definition:<name>`` resumes only a run that such a pause paused."""
MAX_REQUEST_IDS = 100
"""The request ids a run keeps (the latest): a copy of a request older than that could
pause or resume it again."""


def pause_of(state: WorkflowState) -> dict[str, Any]:
    """The run's pause document, made when it has none."""
    if state.pause is None:
        state.pause = {"paused": False, "since_ms": None, "by": "", "reason": "",
                       "deferred": [], "ids": []}
    return state.pause


def seen(state: WorkflowState, request_id: str, resume: bool = False) -> bool:
    """Whether the run recorded a pause (``resume``: a resume) with ``request_id``: a
    pause and its resume may carry the same id."""
    return bool(request_id) and state.pause is not None and (
        request_id in state.pause.get(_IDS[resume], ()))


_IDS = {False: "ids", True: "resume_ids"}
"""Where the pause document keeps the request ids of pauses and of resumes (a run
recorded before resumes had their own list keeps theirs with the pauses')."""


def resumes(state: WorkflowState, by: str) -> bool:
    """Whether a resume by ``by`` resumes the paused run: any resume does, but a
    definition's (``BY_DEFINITION``), which resumes only what its pause paused (a run
    paused on its own stays paused)."""
    return not by.startswith(BY_DEFINITION) or pause_of(state)["by"] == by


def _remember(pause: dict[str, Any], request_id: str, resume: bool = False) -> None:
    if request_id:
        key = _IDS[resume]
        pause[key] = [*pause.get(key, []), request_id][-MAX_REQUEST_IDS:]


def _paused(state: WorkflowState, body: ev.WorkflowPaused) -> None:
    if state.paused:
        raise IllegalTransition(f"workflow {state.workflow_id} is already paused")
    pause = pause_of(state)
    pause.update(paused=True, since_ms=body.at_ms, by=body.by, reason=body.reason,
                 deferred=[])
    _remember(pause, body.request_id)


def _resumed(state: WorkflowState, body: ev.WorkflowResumed) -> None:
    """The run resumes: its timers that came due go back to ``state.timers`` (the
    resume's rule fires them); its held attempts stay held until their dispatches."""
    if not state.paused:
        raise IllegalTransition(f"workflow {state.workflow_id} is not paused")
    pause = pause_of(state)
    for due in pause.get("deferred", []):
        if "timer" in due:
            state.timers[due["timer"]] = TimerState(due["fire_at_ms"], due["node"],
                                                    due["index"], due["attempt"])
    pause.update(paused=False, since_ms=None, by=body.by, reason="", deferred=[])
    _remember(pause, body.request_id, resume=True)


def _dispatch_deferred(state: WorkflowState, body: ev.DispatchDeferred) -> None:
    """The attempt is held for the resume. One held already (for its limiters or its
    cache, which it gave back just before: ``Recorder.give_back``) is held for the
    pause instead; a new one takes its node's slot as a dispatch would."""
    if not state.paused:
        raise IllegalTransition(f"workflow {state.workflow_id} is not paused")
    key = task_key(body.node, body.index)
    previous = state.tasks.get(key)
    if (previous is not None and previous.status is TaskStatus.HELD
            and previous.attempt == body.attempt):
        previous.waiting_for = PAUSED
    else:
        attempts.takes_slot(state, body.node, body.index, body.attempt)
        state.tasks[key] = TaskState(
            node=body.node, index=body.index, attempt=body.attempt, status=TaskStatus.HELD,
            dispatched_at_ms=body.at_ms, waiting_for=PAUSED,
            checkpoint=previous.checkpoint if previous is not None else None,
            recalled=previous.recalled if previous is not None else 0)
    pause = pause_of(state)
    pause["deferred"] = [*pause["deferred"], {"task": key}]


def recallable(state: WorkflowState, task: TaskState) -> bool:
    """Whether the pause recalls ``task``: its attempt is on a worker's queue and not
    started (``DISPATCHED``), and it is a task a worker runs. A child workflow's attempt
    is a run of its own (it goes on), and a code workflow's activation replays the
    function without side effects (and one a continuation decided is on no queue)."""
    if task.status is not TaskStatus.DISPATCHED:
        return False
    spec = state.spec.node(task.node)
    if spec.kind is NodeKind.CODE and task.index is not None and task.index % 2 == 0:
        return False
    return task_work(state, task.node, task.index).task != CHILD_TASK


def _recalled(state: WorkflowState, body: ev.DispatchRecalled) -> None:
    """The attempt is recalled: the task is held with the next attempt, keeping its
    node's slot and its checkpoint (it gave back its permits and its cache just before,
    and the next attempt asks again at the resume); the recalled attempt's deadline goes
    with it (a held task implies no timer)."""
    key = task_key(body.node, body.index)
    task = state.tasks.get(key)
    if (not state.paused or task is None or task.status is not TaskStatus.DISPATCHED
            or task.attempt != body.attempt):
        raise IllegalTransition(f"no dispatched attempt {body.attempt} of {key} to recall "
                                f"in workflow {state.workflow_id}")
    task.attempt, task.status, task.waiting_for = body.attempt + 1, TaskStatus.HELD, PAUSED
    task.dispatched_at_ms, task.deadline_ms, task.heartbeat_ms = body.at_ms, None, None
    task.recalled += 1
    pause = pause_of(state)
    pause["deferred"] = [*pause["deferred"], {"task": key}]


def _timer_deferred(state: WorkflowState, body: ev.TimerDeferred) -> None:
    timer = state.timers.pop(body.timer_id, None)
    if timer is None or not state.paused:
        raise IllegalTransition(f"no timer {body.timer_id} to defer in workflow "
                                f"{state.workflow_id} (paused: {state.paused})")
    pause = pause_of(state)
    pause["deferred"] = [*pause["deferred"], {
        "timer": body.timer_id, "fire_at_ms": timer.fire_at_ms, "node": timer.node,
        "index": timer.index, "attempt": timer.attempt}]


PAUSE_HANDLERS: dict[type[Any], Any] = {
    ev.WorkflowPaused: _paused,
    ev.WorkflowResumed: _resumed,
    ev.DispatchDeferred: _dispatch_deferred,
    ev.DispatchRecalled: _recalled,
    ev.TimerDeferred: _timer_deferred,
}
"""Event type -> how it changes the run (``evolve.EVENT_HANDLERS`` holds them)."""
