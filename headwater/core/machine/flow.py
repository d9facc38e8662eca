"""Flow: starting a node, finishing it and working out what follows, breadth first.

A node starts by its kind's rule (looked up in ``registry``), unless its ``when`` is
false (it is skipped, ``ConditionEvaluated``) or cannot be evaluated (it fails). A node
that fails for good has its unfinished map children cancelled; then its
``continue_on_error`` or ``on_error`` says how the workflow goes on, and without either
every node downstream of it is ``upstream_failed`` and the workflow fails (fail fast,
``ending``). When a node finishes, its error route is taken (its handler starts if it failed, and is
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

from headwater.blobs import is_ref
from headwater.core import events as ev
from headwater.core import registry, reuse
from headwater.core.conditions import ConditionError, evaluate, parse_condition
from headwater.core.machine import ending
from headwater.core.machine.recorder import Recorder
from headwater.core.refs import by_reference
from headwater.core.spec import NodeSpec
from headwater.core.state import WorkflowState
from headwater.core.status import NodeStatus
from headwater.errors import InputReferenceError


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
            start(rec, state.spec.node(spec.on_error))
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
        start(rec, spec)


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


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Start a node by its kind's rule, unless the workflow has ended meanwhile, or the
    node's ``when`` is false (it is skipped) or cannot be evaluated (it fails), or the
    run is a rerun that reuses the node's output (``NodeReused``: it succeeds at once)."""
    if rec.current.status.terminal:
        return
    found, output = reuse.reused_node(rec.current, spec.id)
    if found:
        rec.record(ev.NodeReused(rec.current.workflow_id, spec.id, output, rec.at_ms))
        finish(rec, spec.id, NodeStatus.SUCCEEDED)
        return
    if spec.when is not None and not _condition_holds(rec, spec):
        return
    registry.unit(spec.kind).start(rec, spec)


def _condition_holds(rec: Recorder, spec: NodeSpec) -> bool:
    """Evaluate the node's ``when`` and record its value (``ConditionEvaluated``); a
    false one skips the node. A reference that cannot be resolved, or values the
    condition cannot compare, fail the node instead (False)."""
    assert spec.when is not None
    state = rec.current
    source = state.spec.handler_of(spec.id)
    error = state.nodes[source].failure if source is not None else None
    condition = parse_condition(spec.when)
    try:
        values = [state.resolve_input(raw, error=error) for raw in condition.refs]
        for raw, read in zip(condition.refs, values, strict=True):
            if is_ref(read):
                raise by_reference(raw, read)
        value = evaluate(condition, values)
    except (InputReferenceError, ConditionError) as e:
        node_failed(rec, spec.id, f"when: {spec.when}: {e}")
        return False
    rec.record(ev.ConditionEvaluated(state.workflow_id, spec.id, rec.at_ms, value))
    if not value:
        finish(rec, spec.id, NodeStatus.SKIPPED, f"when: {spec.when} is false")
    return value


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
    ending.cancel_tasks(rec, ending.node_tasks(state, node_id), f"node {node_id} failed")
    if spec.continue_on_error or spec.on_error is not None:
        finish(rec, node_id, NodeStatus.FAILED, error)
        return
    wf = state.workflow_id
    state = rec.record(ev.NodeFinished(wf, node_id, NodeStatus.FAILED.value, rec.at_ms, error))
    downstream = descendants(state, node_id)
    for n in state.spec.nodes:
        if n.id in downstream and not state.nodes[n.id].status.terminal:
            rec.record(ev.NodeFinished(wf, n.id, NodeStatus.UPSTREAM_FAILED.value,
                                       rec.at_ms, f"needs {node_id}, which failed"))
    ending.end_workflow(rec, ev.WorkflowFailed(wf, rec.at_ms, error), f"workflow failed: {error}")
