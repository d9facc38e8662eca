"""The ``workflow`` kind's rules and its ``UNIT``: how its node starts and what its
attempts, timer and signals do, and how its events change the state (the kind is
described in ``headwater/core/kinds/workflow/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.kinds.map import UNIT as MAP
from headwater.core.kinds.task import UNIT as TASK
from headwater.core.kinds.workflow.records import DESCRIBE, FOLLOW, parse_child
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.kinds import KindParts, Work
from headwater.core.state import WorkflowState

CHILD_FAILED = "ChildWorkflowFailed"
"""The error type of a child attempt whose child failed (retryable)."""
CHILD_CANCELLED = "ChildWorkflowCancelled"
"""The error type of a child attempt whose child was cancelled (not retryable: someone
cancelled it on purpose)."""


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Start the child of attempt 1, or expand over the list and start the first ones."""
    (MAP if spec.fans_out else TASK).start(rec, spec)


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A child succeeded: the node succeeds with its output, or (with ``over``) the next
    child starts in its slot, or the node finishes with the results in input order."""
    (MAP if spec.fans_out else TASK).attempt_succeeded(rec, spec, report)


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A child failed for good (its last attempt's child failed, was cancelled or timed
    out): the node fails, or (with ``over`` and ``continue_on_error``) goes on."""
    (MAP if spec.fans_out else TASK).attempt_failed(rec, spec, report)


def report_to_parent(body: ev.Body, state: WorkflowState | None,
                     ) -> ev.TaskStarted | ev.TaskSucceeded | ev.TaskFailed | None:
    """A child workflow's report to the parent attempt that started it, for an event of
    the child's history: started once linked (``ParentLinked``), and its end (failed:
    retryable; cancelled: not, someone meant it). None for any other event, and for a
    workflow that is no child. The coordinator sends it on ``reports``."""
    if isinstance(body, ev.ParentLinked):
        return ev.TaskStarted(body.parent_id, body.node, body.index, body.attempt, body.at_ms,
                              worker=body.workflow_id)
    parent = state.parent if state is not None else None
    if parent is None or not isinstance(body, ev.TERMINAL_BODIES):
        return None
    where = (parent["workflow_id"], parent["node"], parent["index"], parent["attempt"],
             body.at_ms)
    if isinstance(body, ev.WorkflowSucceeded):
        return ev.TaskSucceeded(*where, output=body.output)
    if isinstance(body, ev.WorkflowFailed):
        return ev.TaskFailed(*where, f"child workflow {body.workflow_id} failed: {body.error}",
                             CHILD_FAILED, retryable=True)
    reason = body.reason or "cancel requested"
    return ev.TaskFailed(*where, f"child workflow {body.workflow_id} was cancelled: {reason}",
                         CHILD_CANCELLED, retryable=False)


def _parent_linked(state: WorkflowState, body: ev.ParentLinked) -> None:
    """A child workflow is linked to the parent attempt that started it."""
    state.parent = {"workflow_id": body.parent_id, "node": body.node, "index": body.index,
                    "attempt": body.attempt}


def _parse(raw: Mapping[str, Any], where: str, work: Work,
           validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    """A workflow node's fields: its child's spec (inline, or a definition)."""
    return KindParts(child=parse_child(raw, where, validate, faults))


KEYS = frozenset({"workflow", "definition", "definition_version", "input", "queue", "retry",
                  "timeout", "over", "max_concurrency"})
"""A workflow node's fields."""

UNIT = KindUnit(NodeKind.WORKFLOW, KEYS, start, attempt_succeeded, attempt_failed,
                parse=_parse, events={ev.ParentLinked: _parent_linked}, describe=DESCRIBE,
                follow=FOLLOW)
"""The ``workflow`` kind."""
