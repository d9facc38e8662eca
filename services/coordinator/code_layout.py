"""A code workflow's journal in the table: each activation's and each step's part in
its own task entry, only counts in the header.

The header is rewritten on every event, so a journal kept there whole would make step
``k`` write ``k`` steps again (changelog bytes growing with the square of the steps, as
a loop's transcript once did). Each activation's ``[dispatched at, results given]``
goes to its task entry, each step's entry (its command, its result and the result's
place among the results) to the step's task entry, written when they change; the
header keeps ``nacts``, ``nsteps``, ``decided``, ``patches`` and the end. ``restore`` rebuilds the
journal from them (``headwater/core/kinds/code/journal.py``).
"""

from __future__ import annotations

from typing import Any

from headwater.core.state import TaskState, WorkflowState
from headwater.errors import DecodeError

_HEADER_KEYS = ("decided", "finish", "fail", "continue_as_new", "patches")


def header_part(code: dict[str, Any]) -> dict[str, Any]:
    """What the header keeps of a journal."""
    part = {k: code[k] for k in _HEADER_KEYS if k in code}
    part["nacts"], part["nsteps"] = len(code["acts"]), len(code["steps"])
    return part


def task_part(state: WorkflowState, task: TaskState) -> dict[str, Any] | None:
    """What a code node's task entry keeps of its journal: an activation's
    ``[at, through]`` or a step's entry; None for a task of another kind of node."""
    code = state.nodes[task.node].code if task.node in state.nodes else None
    if code is None or task.index is None:
        return None
    k = task.index // 2
    if task.index % 2 == 0:
        return {"act": code["acts"][k]} if k < len(code["acts"]) else None
    return {"step": code["steps"][k]} if k < len(code["steps"]) else None


def restore(state: WorkflowState, parts: dict[str, dict[int, dict[str, Any]]]) -> None:
    """Rebuild each code node's journal from its header part and its tasks' parts
    (node -> task index -> part).

    Raises:
        DecodeError: an activation or a step the header counts has no part.
    """
    for node_id, node in state.nodes.items():
        code = node.code
        if code is None or "nacts" not in code:
            continue
        found = parts.get(node_id, {})
        try:
            acts = [found[2 * k]["act"] for k in range(code["nacts"])]
            steps = [found[2 * s + 1]["step"] for s in range(code["nsteps"])]
        except KeyError as e:
            raise DecodeError(f"code node {node_id} of {state.workflow_id}: the entry of "
                              f"task {e} holds no part of its journal") from None
        done = sorted((s for s, e in enumerate(steps) if "order" in e),
                      key=lambda s: int(steps[s]["order"]))
        node.code = {"acts": acts, "steps": steps, "done": done,
                     **{k: code[k] for k in _HEADER_KEYS if k in code}}
