"""Ending: the end of the workflow, and its output.

Ending a workflow, by failure or on request, cancels every unfinished
attempt (``TaskCancelled``, which workers obey) and node before the terminal event; a
workflow in which every node has finished succeeds with its output. Exactly one
terminal event per workflow (docs/architecture.md, invariant 5).
"""

from __future__ import annotations

from typing import Any

from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.machine.recorder import Recorder
from headwater.core.state import TaskState, WorkflowState
from headwater.core.status import NodeStatus
from headwater.errors import InputReferenceError


def end_workflow(rec: Recorder, terminal: ev.WorkflowFailed | ev.WorkflowCancelled,
                 reason: str) -> None:
    """Cancel every unfinished attempt and node, then record the terminal event.

    Args:
        rec: the step's recorder (of a running workflow).
        terminal: the event that ends the workflow.
        reason: the reason given to each ``TaskCancelled`` and cancelled node.
    """
    state = rec.current
    cancel_tasks(rec, list(state.tasks.values()), reason)
    for n in state.spec.nodes if not state.spec_error else ():
        if not state.nodes[n.id].status.terminal:
            rec.record(ev.NodeFinished(state.workflow_id, n.id, NodeStatus.CANCELLED.value,
                                       rec.at_ms, reason))
    rec.record(terminal)


def cancel_tasks(rec: Recorder, tasks: list[TaskState], reason: str) -> None:
    """Record ``TaskCancelled`` for each task that is queued, running or waiting to retry."""
    wf = rec.current.workflow_id
    for t in tasks:
        if not t.status.terminal:
            rec.record(ev.TaskCancelled(wf, t.node, t.index, t.attempt, rec.at_ms, reason))


def node_tasks(state: WorkflowState, node_id: str) -> list[TaskState]:
    """The tasks of a fanned-out node's items dispatched so far (none for a node
    without items)."""
    node = state.nodes[node_id]
    if node.total is None:
        return []  # a task node's own task has just ended
    return [state.tasks[task_key(node_id, i)] for i in range(node.next_index)]


def finish_if_done(rec: Recorder) -> None:
    """Succeed a running workflow in which every node has finished, with its output
    (or fail it if the output template cannot be resolved)."""
    state = rec.current
    if state.status.terminal or state.open_nodes > 0:
        return
    try:
        output = _workflow_output(state)
    except InputReferenceError as e:
        rec.record(ev.WorkflowFailed(state.workflow_id, rec.at_ms, f"output: {e}"))
        return
    rec.record(ev.WorkflowSucceeded(state.workflow_id, rec.at_ms, output))


def _workflow_output(state: WorkflowState) -> Any:
    """The spec's ``output`` template, or the sink nodes' outputs by node id."""
    if state.spec.output is not None:
        return state.resolve_input(state.spec.output)
    needed = {d for n in state.spec.nodes for d in n.needs}
    sinks = [n.id for n in state.spec.nodes if n.id not in needed]
    return {n: state.outputs.get(n) for n in sinks}
