"""The machine's entry points, ``step`` and ``fail``, and the table of inputs by type.

Each input type has one rule in ``INPUT_RULES``: a submission (or a parent's
``ChildSubmitted``) starts a workflow that does not exist yet; every other input applies
only to a running workflow (for a finished one it changes nothing and records nothing).
A cancel request ends the workflow ``cancelled`` (a parent's, naming its ``parent_id``,
only its own child); a signal goes to the node kind that takes it
(``registry.signal_taker``: ``wait``, a schedule's to ``schedule``); a timer goes to
``timers``; a worker's report to ``reports``.

A pause or a resume goes to ``pause`` (``headwater/core/machine/pause.py``), and a
timer to it first (a paused run defers its durable timers).

A cancel, a pause, a resume or a signal for a workflow not known yet is *deferred*
(``Step.deferred``): it was sent after the submission but reached the coordinator first
(they travel on two topics), so the coordinator keeps it and hands it to ``start`` with
the submission, which accepts the workflow and applies it before any node starts.
Reports and timers for an unknown
workflow change nothing.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Sequence
from typing import Any

from headwater.core import events as ev
from headwater.core import registry
from headwater.core.machine import calls, dispatch, ending, pause, reports, submission
from headwater.core.machine.recorder import Recorder, Step
from headwater.core.state import WorkflowState

InputRule = Callable[[Recorder, WorkflowState | None, Any], None]
"""How one input type is applied: ``(recorder, state before, input)``."""


def step(state: WorkflowState | None, event: ev.Input) -> Step:
    """Apply one input to a workflow.

    Args:
        state: the workflow's state, or ``None`` if it has none yet. It is modified in
            place (the caller hands it over), which keeps the cost of a step
            independent of the workflow's size.
        event: a decoded input record.

    Returns:
        The new state and the history events recorded (possibly none). Never raises for
        a well-typed input: invalid specs and bad references fail the workflow as data.
    """
    rec = Recorder(state, event.at_ms)
    INPUT_RULES[type(event)](rec, state, event)
    return rec.result()


def fail(state: WorkflowState | None, event: ev.Input, error: str) -> Step:
    """Fail the workflow of ``event`` as data, for an input that could not be applied
    (its consequences do not fit a Kafka record, or ``step`` has a bug).

    Args:
        state: the workflow's state before ``event`` (modified in place).
        event: the input that could not be applied.
        error: why, recorded in ``WorkflowFailed``.

    Returns:
        The state and events: unfinished attempts and nodes cancelled, then
        ``WorkflowFailed``. A submission of a new workflow is accepted first. Nothing
        when the workflow is unknown (for any other input) or already terminal.
    """
    rec = Recorder(state, event.at_ms)
    if state is None and isinstance(event, ev.WorkflowSubmitted | ev.ChildSubmitted):
        state = submission.accept(rec, event)
        fault = submission.spec_fault(state)
        if fault:
            error = f"invalid spec: {fault}"
    if state is not None and not state.status.terminal:
        ending.end_workflow(rec, ev.WorkflowFailed(state.workflow_id, event.at_ms, error),
                            f"workflow failed: {error}")
    return rec.result()


def start(event: submission.Submission, waiting: Sequence[ev.Input]) -> Step:
    """Apply a submission that found inputs waiting for it (deferred by ``step``).

    Args:
        event: the workflow's submission (or a parent's ``ChildSubmitted``).
        waiting: the inputs deferred for it, in the order they arrived; each is applied
            at its own time or the submission's, whichever is later.

    Returns:
        As ``step``: ``WorkflowAccepted`` (and a child's ``ParentLinked``), what the
        waiting inputs did (a cancel ends the workflow before any node starts), then the
        start of the root nodes if it still runs.
    """
    rec = Recorder(None, event.at_ms)
    state = submission.accept(rec, event)
    for item in waiting if not submission.spec_fault(state) else ():
        item = dataclasses.replace(item, at_ms=max(item.at_ms, rec.at_ms))
        rec.at_ms = item.at_ms
        INPUT_RULES[type(item)](rec, rec.state, item)
    submission.begin(rec, event)
    return rec.result()


def _submitted(rec: Recorder, state: WorkflowState | None,
               event: submission.Submission) -> None:
    if state is None:  # a resubmission of a known workflow changes nothing
        submission.submit(rec, event)


def _signal_or_defer(rec: Recorder, state: WorkflowState | None,
                     event: ev.SignalSent) -> None:
    if state is None:
        rec.deferred = True  # sent right after the submission, which has not arrived yet
    elif not state.status.terminal:
        registry.signal_taker(state)(rec, state, event)  # a wait's; a schedule's pause


def _cancel_or_defer(rec: Recorder, state: WorkflowState | None,
                     event: ev.CancelRequested) -> None:
    if state is None:
        rec.deferred = True  # the submission has not arrived yet: it waits for it
    elif not state.status.terminal:
        _cancel(rec, state, event)


def _pause_or_defer(rec: Recorder, state: WorkflowState | None,
                    event: ev.PauseRequested) -> None:
    if state is None:
        rec.deferred = True  # as a cancel: the run starts paused, before any dispatch
    elif not state.status.terminal:
        pause.pause(rec, state, event)


def _resume_or_defer(rec: Recorder, state: WorkflowState | None,
                     event: ev.ResumeRequested) -> None:
    if state is None:
        rec.deferred = True  # after its pause, which waits for the submission too
    elif not state.status.terminal:
        pause.resume(rec, state, event)


def _cancel(rec: Recorder, state: WorkflowState, event: ev.CancelRequested) -> None:
    """End the workflow cancelled; nothing for a parent's cancel (``parent_id`` set) of
    a workflow that is not that parent's child, nor a run its ``ctx.call`` linked to it
    (its id was taken by another run)."""
    parents = [link["workflow_id"] for link in (state.parent, state.caller) if link]
    if event.parent_id is not None and event.parent_id not in parents:
        return
    reason = event.reason or "cancel requested"
    ending.end_workflow(rec, ev.WorkflowCancelled(state.workflow_id, event.at_ms, event.reason),
                        reason)


def _while_running(rule: Callable[[Recorder, WorkflowState, Any], None]) -> InputRule:
    """``rule``, applied only to a workflow that exists and has not ended."""
    def apply(rec: Recorder, state: WorkflowState | None, event: Any) -> None:
        if state is not None and not state.status.terminal:
            rule(rec, state, event)
    return apply


INPUT_RULES: dict[type[Any], InputRule] = {
    ev.WorkflowSubmitted: _submitted,
    ev.ChildSubmitted: _submitted,  # a child workflow: accepted and linked to its parent
    ev.CancelRequested: _cancel_or_defer,
    ev.SignalSent: _signal_or_defer,
    ev.TimerFired: _while_running(pause.timer_fired),  # deferred while paused
    ev.PauseRequested: _pause_or_defer,
    ev.ResumeRequested: _resume_or_defer,
    **{report: _while_running(reports.apply_report) for report in typing.get_args(ev.Report)},
    ev.PermitGranted: _while_running(dispatch.granted),  # a limiter's, for a held attempt
    ev.PermitDenied: _while_running(reports.permit_denied),  # a limiter's refusal
    ev.CacheAnswered: _while_running(reports.cache_answered),  # a cache's, for a lookup
    ev.CallLinked: _while_running(calls.call_linked),  # a ctx.call's run, accepted
}
"""Input type -> its rule. The report types are those of ``events.Report``; a
limiter's inputs (``PermitRequested``, ``PermitReleased``, ``LimitDefined``) and a
cache's (``CacheLookedUp``, ``CacheReleased``) are their kinds'
(``headwater/core/kinds/__init__.py`` adds them)."""
