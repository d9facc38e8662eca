"""Reruns: a run that takes the outputs of another run's succeeded nodes instead of
running them again (Airflow's clear, Argo's retry, Temporal's reset).

The gateway reads the source run's history and puts what the new run may reuse in its
submission (``WorkflowSubmitted.rerun``), a JSON document::

    {"of": "<source workflow id>", "reset": "<node>" | null,
     "nodes": {"<node>": <output>, ...},
     "items": {"<node>": {"<index>": <output>, ...}, ...},
     "steps": {"<code node>": {"<step>": {"op", "name", "output"}, ...}}}

``WorkflowAccepted`` records it whole, so the new run's history says what it reused and
from where, and a replay folds the same state; the source's history is never touched.
When a node of the new run starts (``machine.flow.start``) and ``nodes`` holds its
output, the node does not run: ``NodeReused`` records the output and its
``NodeFinished`` follows. When a fanned-out node (a map, a child workflow with ``over``)
would dispatch item ``i`` (``machine.dispatch.first``) and ``items`` holds that item's
output, the item is not dispatched: ``TaskReused`` records it as succeeded, and it takes
no slot of the node's window. A code workflow's function runs again from its start;
when it issues step ``s`` as a task or child with the op and name that ``steps`` holds
for it (the source's step that succeeded), the step is not dispatched: ``TaskReused``
records its output, which the function gets as the step's result. A rerun from a step
holds the steps before it. Everything else runs as in any run.

A document of the wrong form (any producer may write a submission) fails the run at
acceptance with the fault named (``rerun_fault``), as an invalid spec does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.core import events as ev
from headwater.core.attempts import KIND_EVOLUTIONS
from headwater.core.ids import task_key
from headwater.core.state import IllegalTransition, TaskState, WorkflowState, node_state
from headwater.core.status import AttemptEnd, NodeStatus, TaskStatus

MAX_SOURCE_ID = 200
"""The longest source id a rerun document may name (``topics.WORKFLOW_ID_PATTERN``)."""


def rerun_fault(state: WorkflowState) -> str:
    """Why the accepted run's rerun document is malformed (``""``: it is fine, or the run
    is not a rerun). Only its form is judged: the outputs are JSON values already."""
    doc = state.rerun
    if doc is None:
        return ""
    if isinstance(doc, dict) and doc.get("of") == state.workflow_id:
        return "rerun.of names the run itself"
    return (_form_fault(doc)
            or _nodes_fault(doc, {n.id: n.fans_out for n in state.spec.nodes})
            or _steps_fault(doc, {n.id for n in state.spec.nodes if n.code is not None}))


def _form_fault(doc: Any) -> str:
    """The fault of the document's own fields (``""``: none)."""
    if not isinstance(doc, dict):
        return f"rerun must be an object, not {type(doc).__name__}"
    unknown = sorted(set(doc) - {"of", "reset", "nodes", "items", "steps"})
    source = doc.get("of")
    if unknown:
        return f"rerun: unknown fields {', '.join(unknown)}"
    if not isinstance(source, str) or not 0 < len(source) <= MAX_SOURCE_ID:
        return f"rerun.of must be a workflow id of 1 to {MAX_SOURCE_ID} characters"
    if not isinstance(doc.get("nodes") or {}, dict) or not isinstance(doc.get("items") or {},
                                                                       dict):
        return "rerun.nodes and rerun.items must be objects"
    return ""


def _nodes_fault(doc: dict[str, Any], fans_out: dict[str, bool]) -> str:
    """The fault of the nodes and items it names (``fans_out``: the spec's node ids ->
    whether the node has items)."""
    nodes, items, reset = doc.get("nodes") or {}, doc.get("items") or {}, doc.get("reset")
    if reset is not None and reset not in fans_out:
        return f"rerun.reset names no node of the spec: {reset!r}"
    missing = [n for n in [*nodes, *items] if n not in fans_out]
    if missing:
        return f"rerun names no node of the spec: {missing[0]!r}"
    for node_id, outputs in items.items():
        if not fans_out[node_id] or not isinstance(outputs, dict):
            return f"rerun.items.{node_id}: only a node with 'over' has items, by index"
        if not all(k.isascii() and k.isdigit() and len(k) <= 9 for k in outputs):
            return f"rerun.items.{node_id}: its keys must be item indexes"
    return ""


def _steps_fault(doc: dict[str, Any], code_nodes: set[str]) -> str:
    """The fault of the code workflow steps it names (``""``: none)."""
    steps = doc.get("steps") or {}
    if not isinstance(steps, dict):
        return "rerun.steps must be an object"
    for node_id, reused in steps.items():
        if node_id not in code_nodes or not isinstance(reused, dict):
            return f"rerun.steps.{node_id}: only a code node has steps, by number"
        for k, step in reused.items():
            if not (k.isascii() and k.isdigit() and len(k) <= 9):
                return f"rerun.steps.{node_id}: its keys must be step numbers"
            if not (isinstance(step, dict) and isinstance(step.get("op"), str)
                    and isinstance(step.get("name"), str) and "output" in step):
                return f"rerun.steps.{node_id}.{k} must be {{op, name, output}}"
    return ""


def reused_step(state: WorkflowState, node_id: str, s: int, op: str,
                name: str) -> tuple[bool, Any]:
    """Whether the run reuses step ``s`` of the code node ``node_id`` (its source's step
    ``s`` was the same op and name, and succeeded), and its output."""
    doc = state.rerun
    steps = doc.get("steps") if isinstance(doc, dict) else None
    reused = (steps.get(node_id) or {}).get(str(s)) if isinstance(steps, dict) else None
    if not isinstance(reused, dict) or (reused.get("op"), reused.get("name")) != (op, name):
        return False, None
    return True, reused.get("output")


def code_steps(source: WorkflowState, before: int | None = None) -> dict[str, Any]:
    """What a rerun of ``source`` (a code workflow's state) may reuse: for each code
    node, its task and child steps that succeeded, numbered below ``before`` (None: all),
    as ``rerun.steps`` holds them."""
    out: dict[str, Any] = {}
    for node_id, node in source.nodes.items():
        steps = (node.code or {}).get("steps") or []
        kept = {str(s): {"op": e["op"], "name": e.get("name", ""),
                         "output": e["result"]["value"]}
                for s, e in enumerate(steps)
                if e["op"] in ("task", "child") and "value" in (e.get("result") or {})
                and (before is None or s < before)}
        if kept:
            out[node_id] = kept
    return out


def reused_node(state: WorkflowState, node_id: str) -> tuple[bool, Any]:
    """Whether the run reuses ``node_id``'s output from its source, and that output."""
    doc = state.rerun
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not nodes or node_id not in nodes:
        return False, None
    return True, nodes[node_id]


def reused_item(state: WorkflowState, node_id: str, index: int) -> tuple[bool, Any]:
    """Whether the run reuses item ``index`` of the fanned-out node ``node_id``, and its
    output."""
    doc = state.rerun
    items = doc.get("items") if isinstance(doc, dict) else None
    outputs = items.get(node_id) if items else None
    if not outputs or str(index) not in outputs:
        return False, None
    return True, outputs[str(index)]


def restore_outputs(state: WorkflowState) -> None:
    """Put back the outputs of the nodes a rerun reused (no task entry holds them) into a
    state rebuilt from the table: a node in ``rerun.nodes`` that succeeded was reused."""
    doc = state.rerun
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    for node_id, output in (nodes or {}).items():
        node = state.nodes.get(node_id)
        if node is not None and node.status is NodeStatus.SUCCEEDED:
            state.outputs[node_id] = output


def rerun_of(state: WorkflowState) -> str | None:
    """The id of the run this one reruns, or None."""
    doc = state.rerun
    source = doc.get("of") if isinstance(doc, dict) else None
    return source if isinstance(source, str) else None


def _node_reused(state: WorkflowState, body: ev.NodeReused) -> None:
    """The node's output is its source's (its ``NodeFinished`` follows)."""
    node = node_state(state, body.node)
    if node.status is not NodeStatus.PENDING:
        raise IllegalTransition(f"node {body.node} is {node.status.value}, not pending")
    state.outputs[body.node] = body.output


def _task_reused(state: WorkflowState, body: ev.TaskReused) -> None:
    """Item ``index`` succeeded with its source's output, without a slot of the window;
    or a code workflow's step did, which its kind's success rule records in the
    journal."""
    node = node_state(state, body.node)
    key = task_key(body.node, body.index)
    evolution = KIND_EVOLUTIONS.get(state.spec.node(body.node).kind)
    step = node.code is not None and evolution is not None and evolution.task_succeeded
    if key in state.tasks or (not step and (
            node.results is None or not 0 <= body.index < len(node.results))):
        raise IllegalTransition(f"no item {key} to reuse in workflow {state.workflow_id}")
    node.next_index = max(node.next_index, body.index + 1)
    state.tasks[key] = TaskState(
        node=body.node, index=body.index, attempt=body.attempt, status=TaskStatus.SUCCEEDED,
        dispatched_at_ms=body.at_ms, finished_at_ms=body.at_ms, progress=1.0,
        outcome=AttemptEnd.REUSED)
    if evolution is not None and evolution.task_succeeded is not None and node.code is not None:
        evolution.task_succeeded(state, ev.TaskSucceeded(
            body.workflow_id, body.node, body.index, body.attempt, body.at_ms, body.output))
        return
    assert node.results is not None
    node.results[body.index] = body.output
    node.done += 1


REUSE_HANDLERS: dict[type[Any], Callable[[WorkflowState, Any], None]] = {
    ev.NodeReused: _node_reused, ev.TaskReused: _task_reused}
"""How the rerun's events change a state (``evolve.EVENT_HANDLERS`` holds them)."""
