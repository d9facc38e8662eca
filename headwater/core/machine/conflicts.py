"""A child workflow whose id another run holds: its parent's attempt is failed at once.

A parent's ``ChildSubmitted`` is refused when its id (``ids.child_id``,
``<parent>:<node>:<attempt>``) names a workflow that is not that attempt's child: a
workflow submitted on its own under that id, or another parent's child
(``idempotency.conflict``). The submission is dead-lettered like any conflict, and
the parent's attempt would wait for a child that never starts: no report would ever
come, and only a node timeout could end it. So the screen that refuses it
(``decide.decide``) also decides the report that fails the attempt, as the child's
coordinator would for a child that failed (``records._to_parent``): ``TaskFailed``,
which the coordinator publishes on ``reports`` keyed by the parent's id, in the intent
of the refused child id's partition (sent again after a crash, it is fenced by attempt
like any report: the attempt fails once); retryable, so that the parent's retry policy
decides (attempt 2 submits ``<parent>:<node>:2``). The run that holds the id is left
untouched: the parent's cancel that follows names the parent
(``CancelRequested.parent_id``), and a workflow that is not that parent's child
ignores it.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.state import WorkflowState

CHILD_CONFLICT = "ChildWorkflowConflict"
"""``TaskFailed.error_type`` of a child attempt whose child id another run holds."""


def conflict_report(state: WorkflowState | None, event: ev.Input,
                    why: str) -> ev.TaskFailed | None:
    """The report that fails the parent attempt of a refused child submission.

    Args:
        state: the workflow the id names (None: unknown, so nothing was refused).
        event: the refused input.
        why: the dead letter's reason (``refusals.refusal``), e.g. ``"workflow id p:c:1
            is already used by a workflow of its own, not by the child workflow of
            attempt 1 of node c of p; the run is unchanged"``.

    Returns:
        ``TaskFailed(parent, node, index, attempt, error=..., error_type=CHILD_CONFLICT,
        retryable=True)`` at the submission's time; None for any other input, and for
        a child whose id names that very attempt's child (a body that differs: that
        child runs, and reports to its attempt when it ends).
    """
    if state is None or not isinstance(event, ev.ChildSubmitted):
        return None
    link = {"workflow_id": event.parent_id, "node": event.node, "index": event.index,
            "attempt": event.attempt}
    if state.parent == link:
        return None
    return child_conflict(event, why)


def child_conflict(event: ev.ChildSubmitted, why: str) -> ev.TaskFailed:
    """The ``TaskFailed`` of the parent attempt whose child ``event`` was refused for
    ``why`` (``conflict_report``'s, and that of a child refused by a purged id's marker
    when the marker names another parent: ``retention.same_parent``)."""
    error = f"child workflow {event.workflow_id} was not started: {why}"
    return ev.TaskFailed(event.parent_id, event.node, event.index, event.attempt,
                         event.at_ms, error[:2000], CHILD_CONFLICT, retryable=True)
