"""How the events of a ``schedule`` node change a workflow's state: the handlers
``evolve`` calls for them (``evolve.EVENT_HANDLERS``).

A schedule node keeps, in its ``NodeState``: the armed fire time (``next_fire_ms``, also
its timer ``schedule:<node>`` in ``state.timers``), the last fire time that came due
(``last_fire_ms``) and whether it is paused. Its runs are its tasks (index k = the k-th
run started, so ``next_index`` counts them) while they run: the end of a run (its
attempt's success, failure or cancellation) removes its task (``run_ended``), so the
state holds the runs still running, not every run ever started (docs/architecture.md,
invariant 7: the cost of an event does not grow with the workflow's age). The ended
runs are workflows of their own, with their own histories and projection rows.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.spec_schedule import schedule_timer_id
from headwater.core.state import NodeState, TimerState, WorkflowState
from headwater.core.status import NodeStatus


def _node(state: WorkflowState, node_id: str) -> NodeState:
    node = state.nodes.get(node_id)
    if node is None or state.spec.node(node_id).schedule is None:
        from headwater.core.evolve import IllegalTransition
        raise IllegalTransition(f"no schedule node {node_id} in workflow {state.workflow_id}")
    return node


def schedule_armed(state: WorkflowState, body: ev.ScheduleArmed) -> None:
    """The schedule runs; its timer is armed for the next fire time."""
    node = _node(state, body.node)
    node.status = NodeStatus.RUNNING
    node.next_fire_ms = body.fire_ms
    state.timers[schedule_timer_id(body.node)] = TimerState(body.fire_ms, body.node, None, 0)


def schedule_fired(state: WorkflowState, body: ev.ScheduleFired) -> None:
    """A fire time came due (its run, if started, is the ``TaskDispatched`` that
    follows)."""
    node = _node(state, body.node)
    node.last_fire_ms = max(node.last_fire_ms or body.fire_ms, body.fire_ms)


def schedule_paused(state: WorkflowState, body: ev.SchedulePaused) -> None:
    """Paused: its fire times are skipped until it is resumed."""
    _node(state, body.node).paused = True
    if body.signal_id:
        state.signal_ids.append(body.signal_id)


def schedule_resumed(state: WorkflowState, body: ev.ScheduleResumed) -> None:
    """Resumed (a ``ScheduleArmed`` follows)."""
    _node(state, body.node).paused = False
    if body.signal_id:
        state.signal_ids.append(body.signal_id)


def run_ended(state: WorkflowState, node_id: str, index: int | None) -> bool:
    """Remove the task of a schedule's run whose attempt has just ended (``evolve``
    calls it for every ``TaskSucceeded``, ``TaskFailed`` and ``TaskCancelled``, after
    their own changes); a task of any other kind of node stays.

    Returns:
        Whether the task was a schedule's run (and is gone).
    """
    if state.spec.node(node_id).schedule is None:
        return False
    state.tasks.pop(task_key(node_id, index), None)
    return True
