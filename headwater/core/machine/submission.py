"""Submission: accepting a workflow and starting it.

A submitted workflow is accepted (``WorkflowAccepted`` holds its spec document, its
input and the registered definition it was resolved from, if any); a child workflow
(``ChildSubmitted``, from its parent's coordinator) is accepted the same way and then
linked to the attempt that started it (``ParentLinked``), to which its end is reported.
An invalid spec fails it at once; otherwise every root node (no needs, not an error
handler) starts, and a workflow with nothing to do succeeds.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.machine import ending, flow
from headwater.core.machine.recorder import Recorder
from headwater.core.state import WorkflowState

Submission = ev.WorkflowSubmitted | ev.ChildSubmitted
"""What starts a workflow: a submission, or a parent's child workflow."""


def accept(rec: Recorder, event: Submission) -> WorkflowState:
    """Record ``WorkflowAccepted`` for a submission (with the definition it names, if
    any), and ``ParentLinked`` after it for a child workflow; returns the new state (its
    ``spec_error`` says whether the spec was valid)."""
    state = rec.record(
        ev.WorkflowAccepted(event.workflow_id, event.at_ms, event.spec, event.input,
                            event.tenant, definition=event.definition,
                            definition_version=event.definition_version)
    )
    if isinstance(event, ev.ChildSubmitted):
        state = rec.record(ev.ParentLinked(event.workflow_id, event.parent_id, event.node,
                                           event.index, event.attempt, event.at_ms))
    return state


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
    if state.spec_error:
        error = f"invalid spec: {state.spec_error}"
        rec.record(ev.WorkflowFailed(state.workflow_id, event.at_ms, error))
        return
    start_roots(rec)
    ending.finish_if_done(rec)


def start_roots(rec: Recorder) -> None:
    """Start every root node (no needs, not an error handler) of a running workflow,
    in declared order: at acceptance, and again after a restart."""
    state = rec.current
    for node in state.spec.nodes:
        if not node.needs and state.spec.handler_of(node.id) is None:
            flow.start(rec, node)
