"""What the PostgreSQL projection should hold for a history, and how rows differ from it.

The projection (``services/projector/writer.py``) keeps one ``workflows`` row,
``nodes`` rows for the nodes the history mentions, one ``tasks`` row per task and one
``events`` row per event. This module states, from the folded state and the history,
the columns that must agree with the state machine's view:

- ``workflows``: ``status``, ``seq``, ``output`` (of a succeeded workflow), ``error``
  (a failure's error, a cancellation's reason), and ``definition`` (``{"name",
  "version"}`` of ``definition`` and ``definition_version``) of a run resolved from a
  registered definition (none for an inline spec, so rows read without those columns
  compare as before), and ``generation`` of a restarted run (``restart_on_failure``);
- ``nodes``: ``status``, ``total`` (a map's size) and ``error`` of every node that has a
  dispatch, a ``MapExpanded`` or a ``NodeFinished`` (a node with none of them, still
  pending, has no row);
- ``tasks``: ``status`` and ``attempt``. A task waiting to retry is counted in the
  projection under the attempt it will dispatch next (``TimerScheduled.attempt``), and
  stays so when cancelled while waiting; the state keeps the failed attempt until then.
  A schedule's run that ended has left the state; its row keeps the end's status. A
  code workflow's activations and steps have rows at their sparse indexes (``main[0]``,
  ``main[3]``, ...), its sleeps, signal waits and patch markers too (made from the
  decision that issued them), and each signal wait a ``waits`` row;
- ``events``: the same ``seq`` numbers with the same types;
- the node kinds' rows (``KindRows``, ``services/projector/kinds.py``): a child's link
  to its parent; ``condition`` and ``wake_at`` of the nodes with a ``ConditionEvaluated``
  or a ``SleepStarted``; each wait's signal, status and consumed signal id; each
  recorded signal's status and the node that took it; each loop step's tool or finish.
  The nodes with a ``WaitStarted``, ``SleepStarted``, ``ConditionEvaluated`` or
  ``ScheduleArmed`` have a ``nodes`` row too.

A ``WorkflowRestarted`` drops the rows of the generation before it (its ``tasks``,
``nodes`` and ``loop_steps`` rows, ``services/projector/restarts.py``): only the events
after the last one give ``nodes`` rows and node kinds' rows, and ``state.tasks`` holds
only the new generation's tasks.

Columns that only the projection or the gateway keeps (worker, times, ``body_hash``,
``request_hash``)
are not compared. A ``workflows`` row with ``seq`` 0 is the gateway's claim of an id
whose submission the coordinator has not accepted yet. Pure code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.core import events as ev
from headwater.core.ids import CODE_TIMER, WAIT_TIMER, parse_node_timer_id, task_key
from headwater.core.kinds.code.decision import ENDS
from headwater.core.kinds.code.journal import step_index
from headwater.core.state import WorkflowState
from headwater.core.status import WorkflowStatus
from ops.jsondiff import ABSENT, diff_json
from services.projector.kinds import SignalStatus, WaitStatus

NODE_ROWS = (ev.TaskDispatched, ev.MapExpanded, ev.NodeFinished, ev.WaitStarted,
             ev.SleepStarted, ev.ConditionEvaluated, ev.ScheduleArmed, ev.TaskReused,
             ev.TaskHeld, ev.TaskLookedUp, ev.DispatchDeferred)
"""The events whose node gets a ``nodes`` row."""

UNAUDITED = frozenset({ev.ScheduleFired, ev.SchedulePaused, ev.ScheduleResumed,
                       ev.PermitRequested, ev.PermitReleased, ev.PermitIssued,
                       ev.PermitRefused, ev.LimitDefined, ev.CacheLookedUp, ev.CacheServed,
                       ev.CacheReleased, ev.WorkflowPaused, ev.WorkflowResumed,
                       ev.TimerDeferred})
"""Events with no expected row of their own: what they write (``schedules`` rows, a
limiter's ``limiters`` row, a cache's ``caches`` row, a pause's ``workflows.paused``) is
not compared."""


@dataclass
class KindRows:
    """The compared columns of one workflow's node kinds' rows.

    Attributes:
        parent: ``{"workflow_id", "node", "index", "attempt"}`` of the ``workflows``
            row's ``parent_*`` columns, or None when they are null.
        nodes: node id -> ``{"condition", "wake_at_ms"}`` (``nodes.condition``, and
            ``nodes.wake_at`` in ms since the epoch) of the nodes with either set.
        waits: wait key (``node`` or ``node[index]``) -> ``{"signal", "status",
            "signal_id"}``.
        signals: seq -> ``{"name", "index", "signal_id", "status", "node"}``.
        steps: ``node/step`` -> ``{"tool", "finish"}``.
    """

    parent: dict[str, Any] | None = None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    waits: dict[str, dict[str, Any]] = field(default_factory=dict)
    signals: dict[int, dict[str, Any]] = field(default_factory=dict)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (signal seqs as string keys)."""
        return {"parent": self.parent, "nodes": self.nodes, "waits": self.waits,
                "signals": {str(k): v for k, v in sorted(self.signals.items())},
                "steps": self.steps}


@dataclass
class ProjectionRows:
    """The compared columns of one workflow's rows.

    Attributes:
        workflow: ``{"status", "seq", "output", "error"}`` and ``"definition"`` when
            the row names one, or None without a row.
        nodes: node id -> ``{"status", "total", "error"}``.
        tasks: task key -> ``{"status", "attempt"}``.
        events: seq -> event type.
        kinds: the node kinds' rows; None: not read (they are then not compared).
    """

    workflow: dict[str, Any] | None = None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[int, str] = field(default_factory=dict)
    kinds: KindRows | None = None

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
                "events": {str(k): v for k, v in sorted(self.events.items())},
                "kinds": self.kinds.to_json() if self.kinds is not None else None}


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
    rows.kinds = expected_kind_rows(events)
    rows.workflow = {
        "status": state.status.value, "seq": state.seq,
        "output": state.output if state.status is WorkflowStatus.SUCCEEDED else None,
        "error": state.error,
    }
    if state.definition is not None:
        rows.workflow["definition"] = {"name": state.definition,
                                       "version": state.definition_version}
    if state.generation > 1:
        rows.workflow["generation"] = state.generation
    next_attempt: dict[str, int] = {}
    mentioned: set[str] = set()
    for e in events:
        b = e.body
        if isinstance(b, ev.WorkflowRestarted):
            mentioned.clear()
            next_attempt.clear()
        if isinstance(b, NODE_ROWS):
            mentioned.add(b.node)
        if isinstance(b, ev.TimerScheduled):
            key = task_key(b.node, b.index)
            next_attempt[key] = max(next_attempt.get(key, 0), b.attempt)
    for node_id in sorted(mentioned):
        node = state.nodes[node_id]
        rows.nodes[node_id] = {"status": node.status.value, "total": node.total,
                               "error": node.error}
    rows.tasks.update(_task_rows(state, next_attempt))
    rows.tasks.update(_ended_runs(events, state))
    return rows


def _task_rows(state: WorkflowState, next_attempt: dict[str, int]) -> dict[str, dict[str, Any]]:
    """The ``tasks`` rows of the state's tasks (a code workflow's sleeps, signal waits
    and patch markers too: the projector makes their rows from the decision that issued
    them, ``services/projector/code_steps.py``), each under the attempt it has or will
    dispatch next."""
    return {key: {"status": task.status.value,
                  "attempt": max(task.attempt, next_attempt.get(key, 0))}
            for key, task in state.tasks.items()}


_RUN_ENDS = {ev.TaskSucceeded: "succeeded", ev.TaskFailed: "failed",
             ev.TaskCancelled: "cancelled"}


def _ended_runs(events: Sequence[ev.HistoryEvent],
                state: WorkflowState) -> dict[str, dict[str, Any]]:
    """The ``tasks`` rows of a schedule's runs that ended: their tasks left the state
    (``kinds/schedule/rules.py``, ``_run_ended``), their rows stay, with the status of the end."""
    out: dict[str, dict[str, Any]] = {}
    for e in [] if state.spec_error else events:
        b = e.body
        if (isinstance(b, ev.TaskSucceeded | ev.TaskFailed | ev.TaskCancelled)
                and task_key(b.node, b.index) not in state.tasks
                and state.spec.node(b.node).schedule is not None):
            out[task_key(b.node, b.index)] = {"status": _RUN_ENDS[type(b)],
                                              "attempt": b.attempt}
    return out


def expected_kind_rows(events: Sequence[ev.HistoryEvent]) -> KindRows:
    """The node kinds' rows a history implies (the rules of ``services/projector/kinds.py``).

    Args:
        events: a workflow's history, in ``seq`` order, without duplicates.

    Returns:
        The compared columns of its node kinds' rows.
    """
    rows = KindRows()
    for e in events:
        apply = KIND_RULES.get(type(e.body))
        if apply is not None:
            apply(rows, e.seq, e.body)
        elif e.terminal:
            _end_waits(rows, None)
    return rows


def _end_waits(rows: KindRows, node: str | None) -> None:
    """The open waits of ``node`` (of every node: None) end."""
    for key, wait in rows.waits.items():
        if wait["status"] == WaitStatus.WAITING and (node is None or _node_of(key) == node):
            wait["status"] = WaitStatus.ENDED.value


def _node_of(wait_key: str) -> str:
    return wait_key.split("[", 1)[0]


def _node_row(rows: KindRows, node: str) -> dict[str, Any]:
    return rows.nodes.setdefault(node, {"condition": None, "wake_at_ms": None})


def _wait_ended(rows: KindRows, key: str, status: WaitStatus, signal_id: str = "") -> None:
    wait = rows.waits.get(key)
    if wait is not None and wait["status"] == WaitStatus.WAITING:
        wait["status"], wait["signal_id"] = status.value, signal_id or wait["signal_id"]


def _consumed(rows: KindRows, seq: int, b: ev.SignalConsumed) -> None:
    _wait_ended(rows, task_key(b.node, b.index), WaitStatus.SIGNALLED, b.signal_id)
    for signal_seq in sorted(rows.signals):  # the oldest that matches (a code
        signal = rows.signals[signal_seq]  # workflow's has no index; its wait's task has)
        if (signal_seq < seq and signal["status"] == SignalStatus.RECEIVED
                and signal["index"] in (b.index, None)
                and (signal["name"], signal["signal_id"]) == (b.name, b.signal_id)):
            signal["status"], signal["node"] = SignalStatus.CONSUMED.value, b.node
            return


def _timer_fired(rows: KindRows, seq: int, b: ev.TimerFired) -> None:
    parsed = parse_node_timer_id(b.timer_id)
    if parsed is not None and parsed[0] in (WAIT_TIMER, CODE_TIMER):  # a code timer of
        _wait_ended(rows, parsed[1], WaitStatus.TIMED_OUT)  # a sleep has no wait row


def _code_waits(rows: KindRows, seq: int, b: ev.TaskSucceeded) -> None:
    """An activation's decision: a wait row per signal wait it issued (keyed by its
    task, ``services/projector/code_steps.py``)."""
    decision = b.output if isinstance(b.output, dict) else None
    if (b.index is None or b.index % 2 or decision is None
            or any(key in decision for key in ENDS)):
        return
    for step in decision.get("steps") or ():
        if (isinstance(step, dict) and step.get("op") == "signal"
                and isinstance(step.get("step"), int)):
            rows.waits[task_key(b.node, step_index(step["step"]))] = {
                "signal": str(step.get("name")), "status": WaitStatus.WAITING.value,
                "signal_id": ""}


def _signal(status: SignalStatus) -> Callable[[KindRows, int, Any], None]:
    def record(rows: KindRows, seq: int, b: ev.SignalSent | ev.SignalDiscarded) -> None:
        rows.signals[seq] = {"name": b.name, "index": b.index, "signal_id": b.signal_id,
                             "status": status.value, "node": ""}
        if status is SignalStatus.DISCARDED and b.signal_id:  # a kept one: its row too
            for signal_seq, signal in rows.signals.items():
                if (signal_seq < seq and signal["status"] == SignalStatus.RECEIVED
                        and (signal["name"], signal["index"], signal["signal_id"])
                        == (b.name, b.index, b.signal_id)):
                    signal["status"] = SignalStatus.DISCARDED.value
    return record


def _set(rows: KindRows, node: str, column: str, value: Any) -> None:
    _node_row(rows, node)[column] = value


def _restarted(rows: KindRows) -> None:
    """A restart drops the old generation's ``nodes`` and ``loop_steps`` rows."""
    rows.nodes.clear()
    rows.steps.clear()


KIND_RULES: dict[type, Callable[[KindRows, int, Any], None]] = {
    ev.ParentLinked: lambda rows, seq, b: setattr(rows, "parent", {
        "workflow_id": b.parent_id, "node": b.node, "index": b.index, "attempt": b.attempt}),
    ev.CallerLinked: lambda rows, seq, b: setattr(rows, "parent", {
        "workflow_id": b.parent_id, "node": b.node, "index": b.index, "attempt": b.attempt}),
    ev.WaitStarted: lambda rows, seq, b: rows.waits.__setitem__(
        task_key(b.node, b.index),
        {"signal": b.signal, "status": WaitStatus.WAITING.value, "signal_id": ""}),
    ev.SignalSent: _signal(SignalStatus.RECEIVED),
    ev.SignalDiscarded: _signal(SignalStatus.DISCARDED),
    ev.SignalConsumed: _consumed,
    ev.TimerFired: _timer_fired,
    ev.TaskSucceeded: _code_waits,
    ev.TaskCancelled: lambda rows, seq, b: _wait_ended(rows, task_key(b.node, b.index),
                                                       WaitStatus.ENDED),
    ev.NodeFinished: lambda rows, seq, b: _end_waits(rows, b.node),
    ev.SleepStarted: lambda rows, seq, b: _set(rows, b.node, "wake_at_ms", b.wake_at_ms),
    ev.ConditionEvaluated: lambda rows, seq, b: _set(rows, b.node, "condition", bool(b.value)),
    ev.LoopStepDecided: lambda rows, seq, b: rows.steps.__setitem__(
        f"{b.node}/{b.step}", {"tool": b.tool, "finish": b.finish}),
    ev.WorkflowRestarted: lambda rows, seq, b: _restarted(rows),
}
"""Body type -> how it changes the node kinds' rows (a terminal event ends every open
wait)."""


def as_stored(value: Any) -> Any:
    """``value`` as the projection can hold it: PostgreSQL holds no U+0000, so the
    projector stores a text or JSON value that has one with U+FFFD in its place
    (``services.projector.writer.sanitize``); a history saying ``"a\\u0000b"`` is a
    projection saying ``"a\\ufffdb"``, not a difference."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {k: as_stored(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_stored(v) for v in value]
    return value


def _diff(want: Any, have: Any, path: str) -> list[tuple[str, Any, Any]]:
    """``diff_json`` of what the history implies, as stored, and what is there."""
    return diff_json(as_stored(want), have, path)


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
        out += _diff(expected.workflow if expected.workflow is not None else ABSENT,
                         actual.workflow if actual.workflow is not None else ABSENT,
                         "workflows")
    for table, want, have in (("nodes", expected.nodes, actual.nodes),
                              ("tasks", expected.tasks, actual.tasks)):
        for key in sorted(want.keys() | have.keys()):
            out += _diff(want.get(key, ABSENT), have.get(key, ABSENT), f"{table}[{key}]")
    for seq in sorted(expected.events.keys() | actual.events.keys()):
        out += _diff(expected.events.get(seq, ABSENT), actual.events.get(seq, ABSENT),
                         f"events[{seq}]")
    if actual.kinds is not None:
        out += diff_kind_rows(expected.kinds or KindRows(), actual.kinds)
    return out


def diff_kind_rows(expected: KindRows, actual: KindRows) -> list[tuple[str, Any, Any]]:
    """Where the node kinds' rows differ from the expected ones (paths like
    ``"parent"``, ``"waits[approve[1]].status"``, ``"signals[7].node"``,
    ``"steps[agent/2].tool"``, ``"kind_nodes[pause].wake_at_ms"``)."""
    out = _diff(expected.parent if expected.parent is not None else ABSENT,
                    actual.parent if actual.parent is not None else ABSENT, "parent")
    signals = ({str(k): v for k, v in expected.signals.items()},
               {str(k): v for k, v in actual.signals.items()})
    for table, want, have in (("kind_nodes", expected.nodes, actual.nodes),
                              ("waits", expected.waits, actual.waits),
                              ("signals", *signals),
                              ("steps", expected.steps, actual.steps)):
        for key in sorted(want.keys() | have.keys()):
            out += _diff(want.get(key, ABSENT), have.get(key, ABSENT), f"{table}[{key}]")
    return out
