"""Dispatching a task attempt: resolving its input and recording ``TaskDispatched``.

An attempt's input is the node's ``input`` template resolved against the workflow's
input and the outputs of the nodes upstream (a map item also sees ``${item}`` and
``${index}``; an error handler ``${error}``, and by default ``{"error": ...}`` as its
whole input). A reference that cannot be resolved fails the node for good, except that
an item of a ``continue_on_error`` map fails on its own (it never runs) and the map goes
on. The dispatch carries the checkpoint the task's last attempt saved.
"""

from __future__ import annotations

from typing import Any

from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.machine import ending
from headwater.core.machine.recorder import Recorder
from headwater.core.spec import NodeSpec
from headwater.core.state import WorkflowState
from headwater.errors import InputReferenceError


def dispatch(rec: Recorder, spec: NodeSpec, index: int | None, attempt: int) -> None:
    """Dispatch ``attempt`` of the task ``spec`` (a map's item ``index``, or None).

    Args:
        rec: the step's recorder.
        spec: a task or map node.
        index: the map item, or None for a task node.
        attempt: 1 for the first attempt; a retry timer gives the later ones.
    """
    state = rec.current
    try:
        task_input = _task_input(state, spec, index)
    except InputReferenceError as e:
        if index is not None and spec.continue_on_error:
            # This item fails on its own (it never runs); the map goes on.
            rec.record(ev.TaskFailed(state.workflow_id, spec.id, index, attempt, rec.at_ms,
                                     f"{task_key(spec.id, index)}: {e}",
                                     InputReferenceError.__name__, retryable=False))
            return
        ending.node_failed(rec, spec.id, f"{task_key(spec.id, index)}: {e}")
        return
    previous = state.tasks.get(task_key(spec.id, index))
    rec.record(ev.TaskDispatched(
        workflow_id=state.workflow_id, node=spec.id, index=index, attempt=attempt,
        task=spec.task, queue=spec.queue, input=task_input, at_ms=rec.at_ms,
        timeout_s=spec.timeout, heartbeat_timeout_s=spec.heartbeat_timeout,
        checkpoint=previous.checkpoint if previous is not None else None,
    ))


def _task_input(state: WorkflowState, spec: NodeSpec, index: int | None) -> Any:
    """The attempt's input. Raises ``InputReferenceError`` for a reference that cannot
    be resolved."""
    source = state.spec.handler_of(spec.id)
    error = state.nodes[source].failure if source is not None else None
    item = _map_item(state, spec, index)
    if source is not None and spec.input is None:
        return {"error": error}
    return state.resolve_input(spec.input, item, index, error)


def _map_item(state: WorkflowState, spec: NodeSpec, index: int | None) -> Any:
    if index is None:
        return None
    items = state.resolve_input(spec.over)
    return items[index]
