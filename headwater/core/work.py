"""What one task of a run runs and how, and how many tries it has made: the task's name,
queue, retry policy, timeout and heartbeat timeout (``task_work``), read off the run's state
because a loop's tool and a code workflow's step are decided as the run goes, and the
count its retry policy compares with ``max_attempts`` (``task_tries``).

Attempts are numbered across a run's generations (a restart numbers its attempts after
every earlier one) and across recalls (a pause recalls an attempt that had not started,
and its resume dispatches the next one): neither counts against the retry policy.
"""

from __future__ import annotations

from typing import NamedTuple

from headwater.core.ids import task_key
from headwater.core.retry import RetryPolicy
from headwater.core.state import WorkflowState

CHILD_TASK = "workflow"
"""The task name of a child workflow's attempts (``TaskDispatched.task``): no worker
runs them; the coordinator starts the child instead."""


class TaskWork(NamedTuple):
    """What one task runs and how (``task_work``): times in seconds."""

    task: str
    queue: str
    retry: RetryPolicy
    timeout: float | None
    heartbeat_timeout: float | None


def task_work(state: WorkflowState, node_id: str, index: int | None) -> TaskWork:
    """What one task of a node runs and how: the node's own task, queue, retry policy,
    timeout and heartbeat timeout, except that a child workflow's attempts run no task
    (``CHILD_TASK``, no lease) and a loop's odd index (``2k+1``, the tool of step k) runs
    the tool its step's decision picked.

    Raises:
        KeyError: no such node, or no tool decided for that step of the loop.
    """
    spec = state.spec.node(node_id)
    if spec.child is not None:
        return TaskWork(CHILD_TASK, spec.queue, spec.retry, spec.timeout, None)
    if spec.code is not None and index is not None and index % 2 == 1:
        return _code_step_work(state, node_id, index)
    if spec.loop is not None and index is not None and index % 2 == 1:
        tool = spec.loop.tool(_decided_tool(state, node_id, index // 2))
        if tool is None:
            raise KeyError(f"loop {node_id} has no tool decided for step {index // 2}")
        return TaskWork(tool.task, tool.queue, tool.retry, tool.timeout,
                        tool.heartbeat_timeout)
    return TaskWork(spec.task, spec.queue, spec.retry, spec.timeout, spec.heartbeat_timeout)


def task_tries(state: WorkflowState, node_id: str, index: int | None, attempt: int) -> int:
    """How many attempts of the task ``attempt`` makes, as its retry policy counts them:
    this generation's (``attempt - attempt_floor``, ``restart``) less those a pause
    recalled before they started (``TaskState.recalled``, ``machine/pause.py``)."""
    task = state.tasks.get(task_key(node_id, index))
    return attempt - state.attempt_floor - (task.recalled if task is not None else 0)


def _code_step_work(state: WorkflowState, node_id: str, index: int) -> TaskWork:
    """What step ``index // 2`` of a code node runs: the task (or child) and the
    settings its function's ``wf.run`` (``wf.call``) gave it."""
    steps = (state.nodes[node_id].code or {}).get("steps") or []
    if not 0 <= index // 2 < len(steps):
        raise KeyError(f"code node {node_id} issued no step {index // 2}")
    step = steps[index // 2]
    retry = RetryPolicy(**step["retry"]) if step.get("retry") else RetryPolicy()
    if step["op"] == "child":
        return TaskWork(CHILD_TASK, state.spec.node(node_id).queue, retry,
                        step.get("timeout"), None)
    return TaskWork(str(step.get("name", "")), str(step.get("queue", "")), retry,
                    step.get("timeout"), step.get("heartbeat_timeout"))


def _decided_tool(state: WorkflowState, node_id: str, step: int) -> str:
    """The tool the decision of step ``step`` of a loop picked (``""``: none)."""
    node = state.nodes[node_id]
    if node.decision is not None and node.decision.get("step") == step:
        return str(node.decision.get("tool", ""))
    done = [e for e in node.transcript or () if e.get("step") == step]
    return str(done[0]["tool"]) if done else ""
