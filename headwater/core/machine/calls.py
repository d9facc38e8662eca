"""``ctx.call`` children in the machine: the links both histories record, and the
cancels the parent's end sends them (``headwater/core/calls.py`` describes them).

``link_caller`` records a called run's ``CallerLinked`` at its acceptance;
``call_linked`` records a ``CallLinked`` in a running parent; ``late_cancel`` is the
cancel ``decide`` sends at once for a link that reaches a parent that has ended; and
``cancels_at_end`` the cancels the coordinator sends for the parent's terminal event.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.calls import MAX_CALLS, caller_link
from headwater.core.ids import task_key
from headwater.core.machine.recorder import Recorder
from headwater.core.spec import NodeKind
from headwater.core.state import WorkflowState


def link_caller(rec: Recorder, event: ev.WorkflowSubmitted | ev.ChildSubmitted) -> None:
    """Record ``CallerLinked`` for a submission that names the attempt calling it."""
    link = caller_link(event.parent) if isinstance(event, ev.WorkflowSubmitted) else None
    if link is None:
        return
    rec.record(ev.CallerLinked(event.workflow_id, link["workflow_id"], link["node"],
                               link["index"], link["attempt"], rec.at_ms))


CALLING_KINDS = {NodeKind.TASK: False, NodeKind.MAP: True, NodeKind.LOOP: True,
                 NodeKind.CODE: True}
"""The node kinds whose tasks run task code, which may call: kind -> whether its tasks
have an index (a map's items, a loop's or a code workflow's steps)."""


def fits(state: WorkflowState, event: ev.CallLinked) -> bool:
    """Whether ``event`` names an attempt of ``state`` that could have called: of the
    child's tenant, a node of a kind whose tasks run task code (not a wait, a sleep or
    a ``workflow`` node), with an index where its tasks have one, and an attempt the
    task has reached (a submission may name any run as its caller: a link that does not
    fit is not recorded, so it neither shows in that run nor ends with it)."""
    node = next((n for n in state.spec.nodes if n.id == event.node), None)
    if event.tenant != state.tenant or node is None:
        return False
    indexed = CALLING_KINDS.get(node.kind)
    if indexed is None or indexed != (event.index is not None):
        return False
    task = state.tasks.get(task_key(event.node, event.index))
    return task is None or event.attempt <= task.attempt


def call_linked(rec: Recorder, state: WorkflowState, event: ev.CallLinked) -> None:
    """Record a running parent's new link to a ``ctx.call`` child; nothing for a link
    it holds already, one that does not ``fit`` it (another tenant's run, say), or one
    past ``MAX_CALLS``."""
    if (not fits(state, event) or event.child_id in state.calls
            or len(state.calls) >= MAX_CALLS):
        return
    rec.record(event)


def late_cancel(state: WorkflowState | None, event: ev.Input) -> ev.CancelRequested | None:
    """The cancel of a ``ctx.call`` child whose link (``CallLinked``) reached a parent
    that has ended (one that ``fits`` it); None for any other input."""
    if (not isinstance(event, ev.CallLinked) or state is None
            or not state.status.terminal or not fits(state, event)):
        return None
    return _cancel(event.child_id, state, event.at_ms)


def purged_cancel(event: ev.Input, status: str) -> ev.CancelRequested | None:
    """The cancel of a ``ctx.call`` child whose link reached a parent that ended
    (``status``) and was purged since (``retention``); None for any other input. The
    marker keeps no tenant: the child's submitter named that parent."""
    if not isinstance(event, ev.CallLinked):
        return None
    return ev.CancelRequested(event.child_id, event.at_ms,
                              f"parent {event.workflow_id} {status} and was purged",
                              parent_id=event.workflow_id)


def cancels_at_end(state: WorkflowState | None, body: ev.Body) -> list[ev.CancelRequested]:
    """The cancels of every linked ``ctx.call`` child, for the parent's terminal event
    (``body``); none for any other event."""
    if state is None or not isinstance(body, ev.TERMINAL_BODIES):
        return []
    return [_cancel(child, state, body.at_ms) for child in state.calls]


def _cancel(child_id: str, state: WorkflowState, at_ms: int) -> ev.CancelRequested:
    reason = f"parent {state.workflow_id} {state.status.value}" + (
        f": {state.error}" if state.error else "")
    return ev.CancelRequested(child_id, at_ms, reason[:2000], parent_id=state.workflow_id)
