"""What a rerun of an ended run reuses, read from the source's history.

The source's history (the projection's ``events`` rows, every event's record as JSON) is
folded through the core's ``evolve``, as a replay does, so the outputs the new run takes
are the ones the source's coordinator held, whatever the node kinds: a task's output, a
map's results, a wait's fields, a loop's answer.

- A rerun (``reset=None``) reuses every node that succeeded, and of each fanned-out node
  that did not (a map, a child workflow with ``over``), every item that succeeded: only
  what failed, was cancelled or never ran runs again.
- A reset to node ``n`` reuses the same, except ``n`` and every node downstream of it,
  which run again whatever their outcome in the source (Temporal's reset; a reset of a run
  that succeeded runs ``n`` on).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from headwater import codec
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.ids import task_key
from headwater.core.machine.flow import descendants
from headwater.core.state import WorkflowState
from headwater.core.status import NodeStatus, TaskStatus
from headwater.errors import HeadwaterError


class PlanError(HeadwaterError):
    """The source's history cannot be read into a rerun (its events are incomplete)."""


def fold(rows: Iterable[tuple[int, str, Any]], workflow_id: str) -> WorkflowState:
    """The source's state: its ``(seq, type, data)`` event rows folded in ``seq`` order.

    Raises:
        PlanError: no events, a gap, or an event the fold refuses.
    """
    state: WorkflowState | None = None
    try:
        for seq, type_name, data in rows:
            body = codec.RECORD_TYPES[type_name](**_fields(type_name, data))
            state = evolve(state, ev.HistoryEvent(workflow_id, seq, body))
    except (KeyError, TypeError, HeadwaterError) as e:
        raise PlanError(f"the history of {workflow_id} cannot be folded: {e}") from e
    if state is None:
        raise PlanError(f"no history of {workflow_id} in the projection")
    return state


def _fields(type_name: str, data: dict[str, Any]) -> dict[str, Any]:
    """An event's JSON as its record's keyword arguments (lists back to tuples where the
    record keeps arrays)."""
    record = codec.RECORD_TYPES[type_name]
    names = {f.name for f in dataclasses.fields(record)}
    return {k: tuple(v) if isinstance(v, list) and k in _ARRAYS.get(type_name, ()) else v
            for k, v in data.items() if k in names}


_ARRAYS: dict[str, tuple[str, ...]] = {}
"""Record type -> its fields that are Avro arrays (tuples in the record): none of the
history events so far has one."""


def reuse(state: WorkflowState, reset: str | None) -> dict[str, Any]:
    """The rerun document of a new run of ``state``'s workflow (``headwater/core/reuse.py``).

    Args:
        state: the source, folded (``fold``).
        reset: the node to run again with everything downstream of it; None for a rerun.

    Raises:
        PlanError: ``reset`` names no node of the spec.
    """
    spec = state.spec
    again: set[str] = set()
    if reset is not None:
        if reset not in state.nodes:
            raise PlanError(f"no node {reset!r} in {state.workflow_id}; its nodes: "
                            f"{', '.join(n.id for n in spec.nodes)}")
        again = {reset} | descendants(state, reset)
    nodes: dict[str, Any] = {}
    items: dict[str, dict[str, Any]] = {}
    for node in spec.nodes:
        if node.id in again:
            continue
        status = state.nodes[node.id].status
        if status is NodeStatus.SUCCEEDED:
            nodes[node.id] = state.outputs.get(node.id)
        elif node.fans_out:
            done = _succeeded_items(state, node.id)
            if done:
                items[node.id] = done
    return {"of": state.workflow_id, "reset": reset, "nodes": nodes, "items": items}


def _succeeded_items(state: WorkflowState, node_id: str) -> dict[str, Any]:
    """Item index (as text) -> output, of the items of ``node_id`` that succeeded."""
    results = state.nodes[node_id].results or []
    out: dict[str, Any] = {}
    for index, result in enumerate(results):
        task = state.tasks.get(task_key(node_id, index))
        if task is not None and task.status is TaskStatus.SUCCEEDED:
            out[str(index)] = result
    return out

