"""Reports from workers: fencing, outcomes, and what an attempt's end means.

Reports are fenced by attempt (docs/architecture.md, invariant 3): a report for an
unknown task or a later attempt, a duplicate outcome, a second start, a redelivered
chunk or a report after the attempt ended changes nothing and records nothing, except
that a late outcome of an attempt that had timed out, was lost, was cancelled or was
superseded is recorded as ``ReportDiscarded``. A success goes to the node's kind (which
may find its output unfit, and fail the attempt instead); a failure is retried through a
timer while its task's retry policy (``WorkflowState.work``: a loop's tool has its own)
leaves attempts, and otherwise goes to the node's kind as a final failure.
"""

from __future__ import annotations

import dataclasses

from headwater.core import events as ev
from headwater.core import registry
from headwater.core.fencing import stale_reason
from headwater.core.ids import LEASE_TIMER, task_key, task_timer_id
from headwater.core.machine import dispatch, holds, lookups
from headwater.core.machine.recorder import Recorder
from headwater.core.state import TaskState, WorkflowState
from headwater.core.status import TaskStatus
from headwater.core.work import task_tries, task_work


def apply_report(rec: Recorder, state: WorkflowState, report: ev.Report) -> None:
    """Apply a worker's report to a running workflow (fenced by attempt)."""
    task = state.tasks.get(task_key(report.node, report.index))
    if task is None or report.attempt > task.attempt:
        return
    if isinstance(report, ev.TaskSucceeded | ev.TaskFailed):
        _outcome(rec, task, report)
        return
    if report.attempt != task.attempt or not task.status.live:
        return
    if isinstance(report, ev.TaskStarted) and task.status is TaskStatus.RUNNING:
        return  # a redelivered start: already recorded
    if isinstance(report, ev.TaskOutputStreamed) and report.chunk_seq < task.chunks:
        return  # a redelivered chunk
    rec.record(report)


def lease_renewal(state: WorkflowState | None,
                  heartbeat: ev.TaskHeartbeated) -> tuple[str, int] | None:
    """Where a heartbeat kept out of the history moves its attempt's lease: ``(lease
    timer id, new expiry in ms)``, or None when it renews nothing (not the running
    attempt of a live task, or a task without a heartbeat timeout).

    The coordinator keeps such renewals in its timer index instead of recording them: a
    lease that fires is checked against the last *recorded* report, which is older than
    every renewal, so it expires exactly when no heartbeat came for ``heartbeat_timeout``
    (``timers.timer_fired``). A coordinator taking partitions over gives every running
    attempt one full lease, so a renewal lost with its process costs nothing.
    """
    task = None if state is None else state.tasks.get(task_key(heartbeat.node,
                                                               heartbeat.index))
    if (task is None or task.attempt != heartbeat.attempt
            or task.status is not TaskStatus.RUNNING or task.heartbeat_ms is None):
        return None
    key = task_key(heartbeat.node, heartbeat.index)
    return task_timer_id(LEASE_TIMER, key, task.attempt), heartbeat.at_ms + task.heartbeat_ms


def _outcome(rec: Recorder, task: TaskState, report: ev.TaskSucceeded | ev.TaskFailed) -> None:
    stale = stale_reason(task, report.attempt)
    if stale:
        rec.record(ev.ReportDiscarded(report.workflow_id, report.node, report.index,
                                      report.attempt, report.at_ms, type(report).__name__,
                                      stale))
    elif not task.status.live:
        return  # a duplicate of the outcome already recorded
    elif isinstance(report, ev.TaskSucceeded):
        _succeeded(rec, report)
    else:
        attempt_failed(rec, report)


def cache_answered(rec: Recorder, state: WorkflowState, event: ev.CacheAnswered) -> None:
    """The cache answered an attempt's lookup (``machine/lookups.py``): a hit is the
    attempt's success, recorded as ``TaskCached`` and applied as a worker's success is
    (nothing dispatched); a miss is recorded and the attempt goes on to its limits and
    its dispatch. An answer the attempt does not wait for changes nothing."""
    if not lookups.answer_fits(state, event):
        return
    if event.hit:
        cached = lookups.cached(state, event)
        _succeeded(rec, lookups.as_success(cached), recorded=cached)
        return
    rec.record(event)
    dispatch.dispatch(rec, state.spec.node(event.node), event.index, event.attempt,
                      looked_up=True)


def permit_denied(rec: Recorder, state: WorkflowState, event: ev.PermitDenied) -> None:
    """A limiter refused a held attempt's request, its queue being full: the attempt
    fails, retryable (``holds.refusal``), as a worker's failure would have it. A refusal
    the attempt does not wait for changes nothing."""
    if holds.grant_fits(state, event):
        attempt_failed(rec, holds.refusal(event))


def _succeeded(rec: Recorder, report: ev.TaskSucceeded,
               recorded: ev.TaskCached | None = None) -> None:
    """A success goes to the node's kind, unless the kind finds its output unfit (a
    loop's decision naming no allowed tool): then the attempt fails with that fault,
    retryable like any failure. ``recorded``: a cache's hit, recorded instead of the
    success it stands for."""
    spec = rec.current.spec.node(report.node)
    unit = registry.unit(spec.kind)
    fault = unit.output_fault(rec.current, spec, report) if unit.output_fault else None
    if fault is not None:
        attempt_failed(rec, ev.TaskFailed(report.workflow_id, report.node, report.index,
                                          report.attempt, report.at_ms, fault,
                                          unit.output_error, retryable=True))
        return
    # A step's continuation is the kind's to take or ignore; the history's copy has none.
    rec.record(recorded or (report if report.continuation is None
                            else dataclasses.replace(report, continuation=None)))
    unit.attempt_succeeded(rec, spec, report)


def attempt_failed(rec: Recorder, report: ev.TaskFailed) -> None:
    """Record that an attempt failed (reported, timed out or lost): retry it after its
    backoff while attempts are left and the error is retryable; otherwise it is the
    task's final failure, which the node's kind rules on."""
    spec = rec.current.spec.node(report.node)
    state = rec.record(report)
    retry = task_work(state, report.node, report.index).retry
    tries = task_tries(state, report.node, report.index, report.attempt)
    if report.retryable and tries < retry.max_attempts:
        dispatch.schedule_retry(rec, report)
        return
    registry.unit(spec.kind).attempt_failed(rec, spec, report)


def failure_message(state: WorkflowState, report: ev.TaskFailed) -> str:
    """How a task's final failure reads in its node's error, e.g.
    ``"m[2] failed after 3 attempts: RuntimeError: boom"`` (the attempts of this
    generation, ``WorkflowState.tries``)."""
    where = task_key(report.node, report.index)
    count = task_tries(state, report.node, report.index, report.attempt)
    tries = f"after {count} attempt{'s' if count > 1 else ''}"
    error = f"{report.error_type}: {report.error}" if report.error_type else report.error
    return f"{where} failed {tries}: {error}"
