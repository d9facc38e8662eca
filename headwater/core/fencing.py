"""Fencing: which reports come from an attempt that has already ended, and which
attempts must be told to stop.

Reports are fenced by attempt (docs/architecture.md, invariant 3): only the current
attempt of a task may change it. An attempt ends by its outcome, or earlier by the
coordinator's decision (its deadline passed, its lease expired, it was cancelled) or by
a later attempt taking over. A worker that goes on running such an attempt, because it
missed the cancellation or was merely slow to heartbeat, is told to stop by a
``TaskCancelled`` sent in answer to its next report.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.state import TaskState, WorkflowState
from headwater.core.status import AttemptEnd, TaskStatus

ENDED_EARLY = (AttemptEnd.TIMED_OUT, AttemptEnd.LOST, AttemptEnd.CANCELLED)


def stale_reason(task: TaskState, attempt: int) -> str:
    """Why an outcome of ``attempt`` comes too late, or ``""`` if it does not.

    Args:
        task: the task's state.
        attempt: the attempt the outcome is for (not above ``task.attempt``).
    """
    if attempt < task.attempt:
        return f"attempt {attempt} was superseded by attempt {task.attempt}"
    if task.outcome in ENDED_EARLY:
        return f"attempt {attempt} had already ended: {task.outcome.replace('_', ' ')}"
    return ""


def stop_for(state: WorkflowState | None, report: ev.Report) -> ev.TaskCancelled | None:
    """The stop to send when a report shows a worker still running an attempt that has
    ended (cancelled, timed out, lost, superseded, or finished already).

    Args:
        state: the workflow's state after the report was applied (None: unknown).
        report: a report other than an outcome (started, heartbeat, progress, ...).

    Returns:
        A ``TaskCancelled`` for that attempt (not part of the history: it goes to
        ``worker-control`` only), or None when the attempt may go on.
    """
    if state is None or isinstance(report, ev.TaskSucceeded | ev.TaskFailed):
        return None
    task = state.tasks.get(task_key(report.node, report.index))
    if task is None and 0 < report.attempt <= state.attempt_floor:
        return ev.TaskCancelled(report.workflow_id, report.node, report.index, report.attempt,
                                report.at_ms, f"attempt {report.attempt} was ended by a "
                                f"restart (generation {state.generation} runs)")
    if task is None or report.attempt > task.attempt:
        return None
    if report.attempt == task.attempt and task.status in (TaskStatus.DISPATCHED,
                                                          TaskStatus.RUNNING):
        return None
    reason = stale_reason(task, report.attempt) or (
        f"attempt {report.attempt} has already ended ({task.status.value})")
    return ev.TaskCancelled(report.workflow_id, report.node, report.index, report.attempt,
                            report.at_ms, reason)


def stops_for_recalled(recorded: list[ev.HistoryEvent]) -> list[ev.TaskCancelled]:
    """The stops to send at once for the attempts a pause recalled
    (``DispatchRecalled``): the worker that has the dispatch queued skips it, and one
    that has just started it stops (it reports nothing; the resume dispatches the next
    attempt).

    Args:
        recorded: the history events of one step (a ``PauseRequested``, or a submission
            that applied one deferred for it).

    Returns:
        A ``TaskCancelled`` (for ``worker-control`` only) per recalled attempt.
    """
    return [ev.TaskCancelled(r.workflow_id, r.node, r.index, r.attempt, r.at_ms,
                             f"attempt {r.attempt} was recalled: the run paused before "
                             "it started")
            for r in (e.body for e in recorded) if isinstance(r, ev.DispatchRecalled)]


def stops_for_expired(recorded: list[ev.HistoryEvent]) -> list[ev.TaskCancelled]:
    """The stops to send at once for the attempts a fired timer just ended (deadline
    passed, lease expired): the worker that has the dispatch queued skips it, and one
    still running it stops, without waiting for its next report.

    Args:
        recorded: the history events one ``TimerFired`` recorded.

    Returns:
        A ``TaskCancelled`` (for ``worker-control`` only) per attempt failed by the timer.
    """
    fired = {e.body.timer_id for e in recorded if isinstance(e.body, ev.TimerFired)}
    if not fired:
        return []
    return [ev.TaskCancelled(f.workflow_id, f.node, f.index, f.attempt, f.at_ms,
                             f"attempt {f.attempt} has ended: {f.error}")
            for f in (e.body for e in recorded) if isinstance(f, ev.TaskFailed)]
