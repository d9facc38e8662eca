"""What the PostgreSQL projection should hold for a history, and how rows differ from it.

The projection (``services/projector/writer.py``) keeps one ``workflows`` row,
``nodes`` rows for the nodes the history mentions, one ``tasks`` row per task and one
``events`` row per event. This module states, from the folded state and the history,
the columns that must agree with the state machine's view:

- ``workflows``: ``status``, ``seq``, ``output`` (of a succeeded workflow), ``error``
  (a failure's error, a cancellation's reason);
- ``nodes``: ``status``, ``total`` (a map's size) and ``error`` of every node that has a
  dispatch, a ``MapExpanded`` or a ``NodeFinished`` (a node with none of them, still
  pending, has no row);
- ``tasks``: ``status`` and ``attempt``. A task waiting to retry is counted in the
  projection under the attempt it will dispatch next (``TimerScheduled.attempt``), and
  stays so when cancelled while waiting; the state keeps the failed attempt until then;
- ``events``: the same ``seq`` numbers with the same types.

Columns that only the projection or the gateway keeps (worker, times, ``body_hash``)
are not compared. A ``workflows`` row with ``seq`` 0 is the gateway's claim of an id
whose submission the coordinator has not accepted yet. Pure code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.state import WorkflowState
from headwater.core.status import WorkflowStatus
from ops.jsondiff import ABSENT, diff_json


@dataclass
class ProjectionRows:
    """The compared columns of one workflow's rows.

    Attributes:
        workflow: ``{"status", "seq", "output", "error"}``, or None without a row.
        nodes: node id -> ``{"status", "total", "error"}``.
        tasks: task key -> ``{"status", "attempt"}``.
        events: seq -> event type.
    """

    workflow: dict[str, Any] | None = None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[int, str] = field(default_factory=dict)

    @property
    def seq(self) -> int:
        """The last ``seq`` projected (0: none, or only the gateway's claim)."""
        return int(self.workflow["seq"]) if self.workflow is not None else 0

    @property
    def held(self) -> bool:
        """Whether there is any row at all."""
        return bool(self.workflow is not None or self.nodes or self.tasks or self.events)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (event seqs as string keys)."""
        return {"workflow": self.workflow, "nodes": self.nodes, "tasks": self.tasks,
                "events": {str(k): v for k, v in sorted(self.events.items())}}


def expected_rows(state: WorkflowState | None,
                  events: Sequence[ev.HistoryEvent]) -> ProjectionRows:
    """The rows a history implies.

    Args:
        state: ``events`` folded (None for an empty history).
        events: the history up to ``state.seq``, in ``seq`` order.

    Returns:
        The compared columns of the rows the projection should hold.
    """
    rows = ProjectionRows(events={e.seq: e.type for e in events})
    if state is None:
        return rows
    rows.workflow = {
        "status": state.status.value, "seq": state.seq,
        "output": state.output if state.status is WorkflowStatus.SUCCEEDED else None,
        "error": state.error,
    }
    next_attempt: dict[str, int] = {}
    mentioned: set[str] = set()
    for e in events:
        b = e.body
        if isinstance(b, ev.TaskDispatched | ev.MapExpanded | ev.NodeFinished):
            mentioned.add(b.node)
        if isinstance(b, ev.TimerScheduled):
            key = task_key(b.node, b.index)
            next_attempt[key] = max(next_attempt.get(key, 0), b.attempt)
    for node_id in sorted(mentioned):
        node = state.nodes[node_id]
        rows.nodes[node_id] = {"status": node.status.value, "total": node.total,
                               "error": node.error}
    for key, task in state.tasks.items():
        rows.tasks[key] = {"status": task.status.value,
                           "attempt": max(task.attempt, next_attempt.get(key, 0))}
    return rows


def diff_rows(expected: ProjectionRows, actual: ProjectionRows) -> list[tuple[str, Any, Any]]:
    """Where the projection's rows differ from the expected ones.

    A ``workflows`` row is not compared while nothing has been projected (no row is
    expected, and the row there, if any, is the gateway's claim with ``seq`` 0).

    Returns:
        ``(path, expected, actual)`` per difference, paths like ``"workflows.status"``,
        ``"nodes[b].status"``, ``"tasks[m[1]].attempt"``, ``"events[7]"``; ``ABSENT``
        for a missing row.
    """
    out: list[tuple[str, Any, Any]] = []
    if expected.workflow is not None or actual.seq:
        out += diff_json(expected.workflow if expected.workflow is not None else ABSENT,
                         actual.workflow if actual.workflow is not None else ABSENT,
                         "workflows")
    for table, want, have in (("nodes", expected.nodes, actual.nodes),
                              ("tasks", expected.tasks, actual.tasks)):
        for key in sorted(want.keys() | have.keys()):
            out += diff_json(want.get(key, ABSENT), have.get(key, ABSENT), f"{table}[{key}]")
    for seq in sorted(expected.events.keys() | actual.events.keys()):
        out += diff_json(expected.events.get(seq, ABSENT), actual.events.get(seq, ABSENT),
                         f"events[{seq}]")
    return out
