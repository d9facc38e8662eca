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
- A code workflow's function runs again from its start; a rerun reuses every task and
  child step that succeeded (``reuse.code_steps``), and a reset to ``main:<s>`` (its code
  node and a step number) the steps before step ``s``: step ``s`` and what follows run
  again. A reset to ``main`` alone reuses no step.
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
from headwater.core.reuse import code_steps
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
    reset, before = _code_step(state, reset)
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
    doc: dict[str, Any] = {"of": state.workflow_id, "reset": reset, "nodes": nodes,
                           "items": items}
    steps = {node_id: found for node_id, found in code_steps(state, before).items()
             if node_id not in nodes and (before is not None or node_id not in again)}
    if steps:
        doc["steps"] = steps
    return doc


def _code_step(state: WorkflowState, reset: str | None) -> tuple[str | None, int | None]:
    """A reset to ``<code node>:<step>`` as the node and the first step to run again;
    any other reset as it is, with no step.

    Raises:
        PlanError: the step is not a number, or the node is not a code node.
    """
    if reset is None or ":" not in reset:
        return reset, None
    node_id, _, step = reset.partition(":")
    if node_id not in state.nodes or state.nodes[node_id].code is None:
        raise PlanError(f"{reset!r}: only a code workflow's node takes a step "
                        f"(<node>:<step>); {node_id!r} is no code node of {state.workflow_id}")
    if not (step.isascii() and step.isdigit() and len(step) <= 9):
        raise PlanError(f"{reset!r}: the step after ':' must be a step number")
    return node_id, int(step)


def _succeeded_items(state: WorkflowState, node_id: str) -> dict[str, Any]:
    """Item index (as text) -> output, of the items of ``node_id`` that succeeded."""
    results = state.nodes[node_id].results or []
    out: dict[str, Any] = {}
    for index, result in enumerate(results):
        task = state.tasks.get(task_key(node_id, index))
        if task is not None and task.status is TaskStatus.SUCCEEDED:
            out[str(index)] = result
    return out

