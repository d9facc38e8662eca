"""The node kinds: what each kind of node does, in a table keyed by ``NodeKind``.

A kind is one module of this package with the three rules of ``NodeKindRules`` (how the
node starts once its needs are met, what a successful attempt does, what a task's final
failure does); ``KINDS`` names the module for each kind. A new kind (wait, sleep, a child
workflow, a loop) is one new module and one line in ``KINDS``; docs/architecture.md
("Where to add things") lists the rest (spec, events, ``evolve``).
"""

from __future__ import annotations

from typing import Protocol

from headwater.core import events as ev
from headwater.core.machine import map as map_kind
from headwater.core.machine import task as task_kind
from headwater.core.machine.recorder import Recorder
from headwater.core.spec import NodeKind, NodeSpec


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
}
"""Node kind -> the module with its rules."""


def rules(spec: NodeSpec) -> NodeKindRules:
    """The rules of ``spec``'s kind."""
    return KINDS[spec.kind]


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Start a node by its kind's rule, unless the workflow has ended meanwhile."""
    if rec.current.status.terminal:
        return
    rules(spec).start(rec, spec)
