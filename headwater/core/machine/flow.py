"""Flow: finishing a node and working out what follows, breadth first.

When a node finishes, its error route is taken (its handler starts if it failed, and is
skipped otherwise) and each of its dependents is settled: skipped as soon as a node it
needs finished unusable (skipped, or failed without ``continue_on_error``), started once
every node it needs finished usable. A branch not taken does not count as unusable: a
node *branch-skipped* (by its false ``when``, or because every node it needs was
branch-skipped, ``NodeState.branch_skipped``) keeps none of its dependents from
running, so a join of a skipped branch and a taken one runs (seeing null as the skipped
node's output); a node whose needs were all branch-skipped is branch-skipped too.
Consequences are queued on the recorder and worked off in a loop, never by recursion: a
skip can cascade down a 10,000-node chain.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.machine import ending, kinds
from headwater.core.machine.recorder import Recorder
from headwater.core.state import WorkflowState
from headwater.core.status import NodeStatus


def finish(rec: Recorder, node_id: str, status: NodeStatus, error: str = "") -> None:
    """Record that a node finished, then work out what follows, breadth first and without
    recursion (a skip can cascade down a 10,000-node chain).

    Args:
        rec: the step's recorder.
        node_id: the node.
        status: a terminal status.
        error: why, for a node that did not succeed.
    """
    rec.record(ev.NodeFinished(rec.current.workflow_id, node_id, status.value, rec.at_ms,
                               error))
    rec.finished.append(node_id)
    if rec.settling:
        return  # an outer ``finish`` is working through the queue
    rec.settling = True
    try:
        while rec.finished and not rec.current.status.terminal:
            _after_finish(rec, rec.finished.popleft())
    finally:
        rec.settling = False
        rec.finished.clear()
    ending.finish_if_done(rec)


def _after_finish(rec: Recorder, node_id: str) -> None:
    state = rec.current
    spec = state.spec.node(node_id)
    if spec.on_error is not None:
        if state.nodes[node_id].status is NodeStatus.FAILED:
            kinds.start(rec, state.spec.node(spec.on_error))
        else:
            _skip(rec, spec.on_error, f"{node_id} did not fail")
    for dep_id in state.spec.dependents_of(node_id):
        _settle(rec, dep_id)


def _settle(rec: Recorder, node_id: str) -> None:
    """Skip a pending node as soon as a node it needs finished unusable; start it once
    every node it needs finished usable."""
    state = rec.current
    if state.status.terminal or state.nodes[node_id].status is not NodeStatus.PENDING:
        return
    spec = state.spec.node(node_id)
    for need in spec.needs:
        status = state.nodes[need].status
        if status.terminal and not _usable(state, need) and not state.nodes[need].branch_skipped:
            why = "was skipped" if status is NodeStatus.SKIPPED else "failed"
            _skip(rec, node_id, f"needs {need}, which {why}")
            return
    if not all(state.nodes[n].status.terminal for n in spec.needs):
        return
    if spec.needs and all(state.nodes[n].branch_skipped for n in spec.needs):
        were = "was" if len(spec.needs) == 1 else "were"
        _skip(rec, node_id, f"needs {', '.join(spec.needs)}, which {were} skipped by a "
                            "false when")
    else:
        kinds.start(rec, spec)


def _usable(state: WorkflowState, node_id: str) -> bool:
    """Whether dependents of a finished node may run: it succeeded, or failed with
    ``continue_on_error`` (they see its error)."""
    status = state.nodes[node_id].status
    return status is NodeStatus.SUCCEEDED or (
        status is NodeStatus.FAILED and state.spec.node(node_id).continue_on_error)


def _skip(rec: Recorder, node_id: str, why: str) -> None:
    if rec.current.nodes[node_id].status is NodeStatus.PENDING:
        finish(rec, node_id, NodeStatus.SKIPPED, why)


def descendants(state: WorkflowState, node_id: str) -> set[str]:
    """Every node downstream of ``node_id`` (not itself), found without recursion."""
    seen: set[str] = set()
    stack = [node_id]
    while stack:
        for dep in state.spec.dependents_of(stack.pop()):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen
