"""The node kinds: what each kind of node does, in a table keyed by ``NodeKind``.

A kind is one module of this package with the three rules of ``NodeKindRules`` (how the
node starts once its needs are met, what a successful attempt does, what a task's final
failure does), and optionally an ``output_fault`` hook that refuses an unfit output
before the success is recorded; ``KINDS`` names the module for each kind. A new kind is
one new module and one line in ``KINDS``; docs/architecture.md ("Where to add things")
lists the rest (spec, events, ``evolve``). Before any kind's start, the node's ``when``
is evaluated (``ConditionEvaluated``): false skips the node.
"""

from __future__ import annotations

from typing import Protocol

from headwater.core import events as ev
from headwater.core.conditions import ConditionError, evaluate, parse_condition
from headwater.core.machine import child as child_kind
from headwater.core.machine import ending, flow
from headwater.core.machine import loop as loop_kind
from headwater.core.machine import map as map_kind
from headwater.core.machine import schedule as schedule_kind
from headwater.core.machine import sleep as sleep_kind
from headwater.core.machine import task as task_kind
from headwater.core.machine import wait as wait_kind
from headwater.core.machine.recorder import Recorder
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.state import WorkflowState
from headwater.core.status import NodeStatus
from headwater.errors import InputReferenceError


class NodeKindRules(Protocol):
    """The rules of one node kind (met by its module's functions of these names)."""

    def start(self, rec: Recorder, spec: NodeSpec) -> None:
        """The node's needs are met (or it is a root, or its error route was taken):
        begin its work, in a workflow that is still running."""

    def attempt_succeeded(self, rec: Recorder, spec: NodeSpec,
                          report: ev.TaskSucceeded) -> None:
        """An attempt of one of the node's tasks succeeded (already recorded)."""

    def attempt_failed(self, rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
        """One of the node's tasks failed for good: its last attempt failed, or it was
        not retryable (the failure is already recorded)."""


KINDS: dict[NodeKind, NodeKindRules] = {
    NodeKind.TASK: task_kind,
    NodeKind.MAP: map_kind,
    NodeKind.WAIT: wait_kind,
    NodeKind.SLEEP: sleep_kind,
    NodeKind.WORKFLOW: child_kind,
    NodeKind.LOOP: loop_kind,
    NodeKind.SCHEDULE: schedule_kind,
}
"""Node kind -> the module with its rules."""


def rules(spec: NodeSpec) -> NodeKindRules:
    """The rules of ``spec``'s kind."""
    return KINDS[spec.kind]


def output_fault(state: WorkflowState, spec: NodeSpec,
                 report: ev.TaskSucceeded) -> tuple[str, str] | None:
    """Why a successful attempt's output is unfit for its node, as ``(error type,
    message)``, or None when it is fit. A kind that checks outputs (a loop's decisions)
    has a module function ``output_fault(state, spec, report) -> str | None`` and an
    ``OUTPUT_ERROR`` naming the error type; other kinds take any output."""
    module = rules(spec)
    hook = getattr(module, "output_fault", None)
    if hook is None:
        return None
    fault: str | None = hook(state, spec, report)
    if fault is None:
        return None
    return str(getattr(module, "OUTPUT_ERROR", "OutputError")), fault


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Start a node by its kind's rule, unless the workflow has ended meanwhile, or the
    node's ``when`` is false (it is skipped) or cannot be evaluated (it fails)."""
    if rec.current.status.terminal:
        return
    if spec.when is not None and not _condition_holds(rec, spec):
        return
    rules(spec).start(rec, spec)


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
        value = evaluate(condition, [state.resolve_input(raw, error=error)
                                     for raw in condition.refs])
    except (InputReferenceError, ConditionError) as e:
        ending.node_failed(rec, spec.id, f"when: {spec.when}: {e}")
        return False
    rec.record(ev.ConditionEvaluated(state.workflow_id, spec.id, rec.at_ms, value))
    if not value:
        flow.finish(rec, spec.id, NodeStatus.SKIPPED, f"when: {spec.when} is false")
    return value
