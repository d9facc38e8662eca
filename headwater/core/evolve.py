"""``evolve``: how one history event changes a workflow's state.

``evolve`` is the only code that changes a ``WorkflowState``. The state machine
(``headwater.core.machine``) decides which events happen and evolves the state through
them, so folding a workflow's recorded history through ``evolve`` gives the same state
(docs/architecture.md, invariant 1): that is what replay does. Each event type has one
small handler, found in ``EVENT_HANDLERS`` by the event's type: the workflow's own events'
handlers are here, each node kind's are in its unit (``headwater/core/kinds/``), which
also says where its nodes' state differs from the default (``KindEvolution``); the
registry adds them (``install_kind``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import attempts, pausing, reuse
from headwater.core import events as ev
from headwater.core.attempts import KindEvolution
from headwater.core.ids import parse_node_timer_id
from headwater.core.spec import NodeKind
from headwater.core.state import (
    IllegalTransition,
    NodeState,
    WorkflowState,
    error_object,
    new_state,
    node_state,
    set_finished_output,
)
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus


def evolve(state: WorkflowState | None, event: ev.HistoryEvent) -> WorkflowState:
    """Apply one history event to ``state`` (in place) and return it.

    Args:
        state: the state before (``None`` before the first event); it is modified.
        event: the next event; its ``seq`` must be ``state.seq + 1``.

    Returns:
        The state after the event.

    Raises:
        IllegalTransition: the event's seq or content does not fit the state; the message
            names what was expected and what came.
    """
    body = event.body
    if state is None:
        if not isinstance(body, ev.WorkflowAccepted) or event.seq != 1:
            raise IllegalTransition(
                f"expected WorkflowAccepted at seq 1, got {event.type} at seq {event.seq}"
            )
        state = new_state(body)
    elif event.seq != state.seq + 1:
        raise IllegalTransition(f"expected seq {state.seq + 1}, got {event.seq}")
    elif state.status.terminal:
        raise IllegalTransition(f"workflow is {state.status.value}; got {event.type}")
    else:
        handler = EVENT_HANDLERS.get(type(body))
        if handler is None:
            raise IllegalTransition(f"unexpected {type(body).__name__} in a running workflow")
        handler(state, body)
    state.seq = event.seq
    state.updated_at_ms = body.at_ms
    return state


def _node_finished(state: WorkflowState, body: ev.NodeFinished) -> None:
    node = node_state(state, body.node)
    if node.status.terminal:
        raise IllegalTransition(f"node {body.node} is already {node.status.value}")
    node.status = NodeStatus(body.status)
    node.error = body.error
    state.open_nodes -= 1
    if node.status is NodeStatus.FAILED and node.failure is None:
        # It failed before any attempt (a reference, a bad list).
        node.failure = error_object(body.node, None, 0, "", body.error)
    set_finished_output(state, body.node)
    spec = state.spec.node(body.node)
    if node.status is NodeStatus.SKIPPED and spec.needs and all(
            state.nodes[n].branch_skipped for n in spec.needs):
        node.branch_skipped = True  # a skip whose needs were all branch-skipped is one too
    evolution = attempts.KIND_EVOLUTIONS.get(spec.kind)
    if evolution is not None and evolution.node_finished is not None:
        evolution.node_finished(state, body)


def _condition_evaluated(state: WorkflowState, body: ev.ConditionEvaluated) -> None:
    """A false ``when``: the node is branch-skipped (its ``NodeFinished`` follows)."""
    if not body.value:
        node_state(state, body.node).branch_skipped = True


def _workflow_restarted(state: WorkflowState, body: ev.WorkflowRestarted) -> None:
    """A new generation: the nodes start over (pending), the previous generation's
    tasks, outputs and timers go, and attempts are numbered from ``attempt_floor + 1``.
    Every attempt must have ended first (the machine cancels them)."""
    live = [k for k, t in state.tasks.items() if not t.status.terminal]
    highest = max((t.attempt for t in state.tasks.values()), default=0)
    if body.generation != state.generation + 1 or live or body.attempt_floor < highest:
        raise IllegalTransition(
            f"restart to generation {body.generation} (floor {body.attempt_floor}) in "
            f"generation {state.generation} with attempts up to {highest}"
            + (f" and {live[0]} unfinished" if live else ""))
    state.generation, state.attempt_floor = body.generation, body.attempt_floor
    state.generation_seq = state.seq + 1  # this event's
    if body.continued:  # a code workflow's continue-as-new: its new input
        state.continued += 1
        state.input = body.input
    state.nodes = {n.id: NodeState() for n in state.spec.nodes}
    state.open_nodes = len(state.nodes)
    state.tasks.clear()
    state.outputs.clear()
    state.timers.clear()


def _deadline_set(state: WorkflowState, body: ev.DeadlineSet) -> None:
    """The run's deadline (``headwater/core/deadline.py``)."""
    state.deadline_at_ms = body.deadline_ms


def _caller_linked(state: WorkflowState, body: ev.CallerLinked) -> None:
    """A ``ctx.call`` child is linked to the attempt that called it."""
    state.caller = {"workflow_id": body.parent_id, "node": body.node, "index": body.index,
                    "attempt": body.attempt}


def _call_linked(state: WorkflowState, body: ev.CallLinked) -> None:
    """A ``ctx.call`` child of one of the run's attempts was linked to it."""
    if body.child_id not in state.calls:
        state.calls.append(body.child_id)


def _workflow_succeeded(state: WorkflowState, body: ev.WorkflowSucceeded) -> None:
    _terminal(state, WorkflowStatus.SUCCEEDED)
    state.output = body.output


def _workflow_failed(state: WorkflowState, body: ev.WorkflowFailed) -> None:
    _terminal(state, WorkflowStatus.FAILED)
    state.error = body.error


def _workflow_cancelled(state: WorkflowState, body: ev.WorkflowCancelled) -> None:
    _terminal(state, WorkflowStatus.CANCELLED)
    state.error = body.reason


def _terminal(state: WorkflowState, status: WorkflowStatus) -> None:
    """End the workflow: drop timers; whatever is unfinished is cancelled."""
    state.status = status
    state.timers.clear()
    for node in state.nodes.values():
        if not node.status.terminal:
            node.status = NodeStatus.CANCELLED
            state.open_nodes -= 1
    for t in state.tasks.values():
        if not t.status.terminal:
            t.status = TaskStatus.CANCELLED


def drop_node_timers(state: WorkflowState, body: ev.NodeFinished) -> None:
    """A finished wait or sleep drops its remaining own timers (``ids.node_timer_id``)."""
    for timer_id in [t for t, timer in state.timers.items() if timer.node == body.node
                     and parse_node_timer_id(t) is not None]:
        del state.timers[timer_id]


EventHandler = Callable[[WorkflowState, Any], None]
"""How one history event changes a running workflow's state (in place)."""


def install_kind(kind: NodeKind, events: Mapping[type[Any], EventHandler],
                 evolution: KindEvolution) -> None:
    """Add a node kind's event handlers and state rules to the tables
    (``registry.install`` calls it for every kind).

    Raises:
        ValueError: one of its event types has a handler already.
    """
    taken = set(events) & set(EVENT_HANDLERS)
    if taken:
        raise ValueError(f"{kind.value}: events with a handler already: "
                         f"{sorted(t.__name__ for t in taken)}")
    EVENT_HANDLERS.update(events)
    attempts.KIND_EVOLUTIONS[kind] = evolution


EVENT_HANDLERS: dict[type[Any], EventHandler] = {
    **attempts.ATTEMPT_HANDLERS,
    **reuse.REUSE_HANDLERS,
    **pausing.PAUSE_HANDLERS,
    ev.ConditionEvaluated: _condition_evaluated,
    ev.NodeFinished: _node_finished,
    ev.WorkflowRestarted: _workflow_restarted,
    ev.WorkflowSucceeded: _workflow_succeeded,
    ev.WorkflowFailed: _workflow_failed,
    ev.WorkflowCancelled: _workflow_cancelled,
    ev.DeadlineSet: _deadline_set,
    ev.CallerLinked: _caller_linked,
    ev.CallLinked: _call_linked,
}
"""Event type -> how it changes a running workflow (``WorkflowAccepted`` only starts one).
The workflow's own events are listed here; each node kind's are added by
``install_kind`` from its unit (``headwater/core/kinds/``)."""
