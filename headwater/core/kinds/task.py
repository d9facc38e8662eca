"""The ``task`` node kind: one registered task, run on its queue's workers.

It starts by dispatching attempt 1; it succeeds with its attempt (the task's output is
the node's); when its task fails for good the node fails (``flow.node_failed``).
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.caching import KEY as CACHE_KEY
from headwater.core.limits import KEYS as LIMIT_KEYS
from headwater.core.machine import dispatch, flow, reports
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.kinds import REQUIRES_KEY, TASKLIKE_KEYS, no_parts
from headwater.core.status import NodeStatus


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Dispatch the node's first attempt."""
    dispatch.first(rec, spec, None)


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """The task succeeded: so has the node."""
    flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """The task failed for good: so has the node."""
    flow.node_failed(rec, spec.id, reports.failure_message(rec.current, report))


UNIT = KindUnit(NodeKind.TASK, TASKLIKE_KEYS | LIMIT_KEYS | {CACHE_KEY, REQUIRES_KEY}, start,
                attempt_succeeded, attempt_failed, parse=no_parts, task_field="task")
"""The ``task`` kind."""
