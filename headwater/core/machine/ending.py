"""Ending: a node that fails for good, the end of the workflow, and its output.

A node that fails for good has its unfinished map children cancelled; then its
``continue_on_error`` or ``on_error`` says how the workflow goes on (``flow``), and
without either every node downstream of it is ``upstream_failed`` and the workflow
fails (fail fast). Ending a workflow, by failure or on request, cancels every unfinished
attempt (``TaskCancelled``, which workers obey) and node before the terminal event; a
workflow in which every node has finished succeeds with its output. Exactly one
terminal event per workflow (docs/architecture.md, invariant 5).
"""

from __future__ import annotations

from typing import Any

from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.machine import flow
from headwater.core.machine.recorder import Recorder
from headwater.core.state import TaskState, WorkflowState
from headwater.core.status import NodeStatus
from headwater.errors import InputReferenceError


def node_failed(rec: Recorder, node_id: str, error: str) -> None:
    """A node failed for good: cancel its unfinished map children, then go on as its
    ``continue_on_error`` or ``on_error`` says, or fail the workflow (fail fast).

    Args:
        rec: the step's recorder.
        node_id: the node.
        error: why it failed, recorded in its ``NodeFinished`` (and the workflow's error
            when it fails the workflow).
    """
    state = rec.current
    spec = state.spec.node(node_id)
    _cancel_tasks(rec, _node_tasks(state, node_id), f"node {node_id} failed")
    if spec.continue_on_error or spec.on_error is not None:
        flow.finish(rec, node_id, NodeStatus.FAILED, error)
        return
    wf = state.workflow_id
    state = rec.record(ev.NodeFinished(wf, node_id, NodeStatus.FAILED.value, rec.at_ms, error))
    downstream = flow.descendants(state, node_id)
    for n in state.spec.nodes:
        if n.id in downstream and not state.nodes[n.id].status.terminal:
            rec.record(ev.NodeFinished(wf, n.id, NodeStatus.UPSTREAM_FAILED.value,
                                       rec.at_ms, f"needs {node_id}, which failed"))
    end_workflow(rec, ev.WorkflowFailed(wf, rec.at_ms, error), f"workflow failed: {error}")


def end_workflow(rec: Recorder, terminal: ev.WorkflowFailed | ev.WorkflowCancelled,
                 reason: str) -> None:
    """Cancel every unfinished attempt and node, then record the terminal event.

    Args:
        rec: the step's recorder (of a running workflow).
        terminal: the event that ends the workflow.
        reason: the reason given to each ``TaskCancelled`` and cancelled node.
    """
    state = rec.current
    _cancel_tasks(rec, list(state.tasks.values()), reason)
    for n in state.spec.nodes if not state.spec_error else ():
        if not state.nodes[n.id].status.terminal:
            rec.record(ev.NodeFinished(state.workflow_id, n.id, NodeStatus.CANCELLED.value,
                                       rec.at_ms, reason))
    rec.record(terminal)


def _cancel_tasks(rec: Recorder, tasks: list[TaskState], reason: str) -> None:
    """Record ``TaskCancelled`` for each task that is queued, running or waiting to retry."""
    wf = rec.current.workflow_id
    for t in tasks:
        if not t.status.terminal:
            rec.record(ev.TaskCancelled(wf, t.node, t.index, t.attempt, rec.at_ms, reason))


def _node_tasks(state: WorkflowState, node_id: str) -> list[TaskState]:
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
