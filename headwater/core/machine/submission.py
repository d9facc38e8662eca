"""Submission: accepting a workflow and starting it.

A submitted workflow is accepted (``WorkflowAccepted`` holds its spec document, its
input and the registered definition it was resolved from, if any); a child workflow
(``ChildSubmitted``, from its parent's coordinator) is accepted the same way and then
linked to the attempt that started it (``ParentLinked``), to which its end is reported;
a run a task's ``ctx.call`` submitted is linked to its caller (``CallerLinked``,
``machine/calls.py``), a spec with a ``deadline`` has it recorded (``DeadlineSet``,
``machine/deadline.py``; a run whose deadline has passed fails before any node starts),
and a submission with ``paused_by`` is paused right after (``WorkflowPaused``), so its
root nodes are held (``machine/pause.py``).
An invalid spec fails it at once; otherwise every root node (no needs, not an error
handler) starts, and a workflow with nothing to do succeeds.

A spec is invalid by its form (``state.spec_error``, folded from ``WorkflowAccepted`` at
every replay) or by what the environment says of it when it is accepted
(``spec.environment_faults``: croniter, the time zone database), asked here, once: the
``WorkflowFailed`` it decides is what a replay folds, whatever croniter says then.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.machine import calls, deadline, ending, flow
from headwater.core.machine.recorder import Recorder
from headwater.core.reuse import rerun_fault
from headwater.core.spec import environment_faults
from headwater.core.state import WorkflowState
from headwater.errors import SpecError

Submission = ev.WorkflowSubmitted | ev.ChildSubmitted
"""What starts a workflow: a submission, or a parent's child workflow."""
PAUSED_AT_START = "submitted paused"
"""The reason of the ``WorkflowPaused`` of a run submitted paused (``paused_by``)."""


def accept(rec: Recorder, event: Submission) -> WorkflowState:
    """Record ``WorkflowAccepted`` for a submission (with the definition it names, if
    any), and ``ParentLinked`` after it for a child workflow; returns the new state (its
    ``spec_error`` says whether the spec was valid)."""
    rec.record(
        ev.WorkflowAccepted(event.workflow_id, event.at_ms, event.spec, event.input,
                            event.tenant, definition=event.definition,
                            definition_version=event.definition_version,
                            rerun=event.rerun if isinstance(event, ev.WorkflowSubmitted)
                            else None,
                            cache_refresh=isinstance(event, ev.WorkflowSubmitted)
                            and event.cache_refresh)
    )
    if isinstance(event, ev.ChildSubmitted):
        rec.record(ev.ParentLinked(event.workflow_id, event.parent_id, event.node,
                                   event.index, event.attempt, event.at_ms))
    calls.link_caller(rec, event)  # a ctx.call's run: CallerLinked
    deadline.arm(rec)  # a spec with a deadline: DeadlineSet
    if isinstance(event, ev.WorkflowSubmitted) and event.paused_by is not None:
        # it starts paused (a paused definition's run)
        rec.record(ev.WorkflowPaused(event.workflow_id, event.at_ms, "", event.paused_by,
                                     PAUSED_AT_START))
    return rec.current


def submit(rec: Recorder, event: Submission) -> None:
    """Accept a new workflow and start its root nodes, or fail it for an invalid spec."""
    accept(rec, event)
    begin(rec, event)


def begin(rec: Recorder, event: Submission) -> None:
    """Start an accepted workflow's root nodes, or fail it for an invalid spec; nothing
    when it has ended already (a cancel that was waiting for it)."""
    state = rec.current
    if state.status.terminal:
        return
    fault = spec_fault(state)
    if fault:
        rec.record(ev.WorkflowFailed(state.workflow_id, event.at_ms, f"invalid spec: {fault}"))
        return
    fault = rerun_fault(state)
    if fault:
        rec.record(ev.WorkflowFailed(state.workflow_id, event.at_ms, f"invalid rerun: {fault}"))
        return
    if deadline.passed_at_start(rec):
        return
    start_roots(rec)
    ending.finish_if_done(rec)


def spec_fault(state: WorkflowState) -> str:
    """Why a just-accepted workflow's spec is invalid ("" when it is valid): its form's
    faults, else the environment's (asked only while accepting it)."""
    if state.spec_error:
        return state.spec_error
    faults = environment_faults(state.spec.nodes)
    return str(SpecError(faults)) if faults else ""


def start_roots(rec: Recorder) -> None:
    """Start every root node (no needs, not an error handler) of a running workflow,
    in declared order: at acceptance, and again after a restart."""
    state = rec.current
    for node in state.spec.nodes:
        if not node.needs and state.spec.handler_of(node.id) is None:
            flow.start(rec, node)
