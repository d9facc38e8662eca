"""Workflow state and ``evolve``: how one history event changes it.

``evolve`` is the only code that changes a ``WorkflowState``. The state machine
(``machine.step``) decides which events happen and evolves the state through them, so
folding a workflow's recorded history through ``evolve`` gives the same state
(DESIGN.md §3.1) — that is what replay does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from headwater.core import events as ev
from headwater.core.ids import (
    DEADLINE_TIMER,
    LEASE_TIMER,
    parse_task_timer_id,
    retry_timer_id,
    task_key,
    task_timer_id,
)
from headwater.core.refs import resolve
from headwater.core.spec import WorkflowSpec, parse_spec
from headwater.errors import HeadwaterError, SpecError


class WorkflowStatus(StrEnum):
    """Lifecycle of a workflow."""

    RUNNING = "running"  # accepted; some node still has work to do
    SUCCEEDED = "succeeded"  # terminal: every node succeeded
    FAILED = "failed"  # terminal: a node failed for good, or the spec was invalid
    CANCELLED = "cancelled"  # terminal: cancelled on request

    @property
    def terminal(self) -> bool:
        """Whether no further event can change the workflow."""
        return self is not WorkflowStatus.RUNNING


class NodeStatus(StrEnum):
    """Lifecycle of a node."""

    PENDING = "pending"  # waiting for its needs
    RUNNING = "running"  # dispatched (a map: some children not finished)
    SUCCEEDED = "succeeded"  # terminal: output available
    FAILED = "failed"  # terminal: retries exhausted or a non-retryable error
    UPSTREAM_FAILED = "upstream_failed"  # terminal: a node it needs failed (fail fast)
    SKIPPED = "skipped"  # terminal: a node it needs failed into an error route or was
    #                     skipped, or it is an error handler whose node did not fail
    CANCELLED = "cancelled"  # terminal: the workflow ended while it was running or waiting

    @property
    def terminal(self) -> bool:
        """Whether the node is finished."""
        return self not in (NodeStatus.PENDING, NodeStatus.RUNNING)


class TaskStatus(StrEnum):
    """Lifecycle of one task (a task node, or one map item) across its attempts."""

    DISPATCHED = "dispatched"  # the current attempt is on its queue
    RUNNING = "running"  # a worker reported it started
    RETRY_WAIT = "retry_wait"  # an attempt failed; a timer will dispatch the next one
    SUCCEEDED = "succeeded"  # terminal
    FAILED = "failed"  # terminal: no attempts left
    CANCELLED = "cancelled"  # terminal: the workflow ended first

    @property
    def terminal(self) -> bool:
        """Whether no report can change the task any more."""
        return self in (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED)

    @property
    def live(self) -> bool:
        """Whether an attempt is on its queue or running (a report may still come)."""
        return self in (TaskStatus.DISPATCHED, TaskStatus.RUNNING)


class Outcome(StrEnum):
    """How the current attempt of a task ended (``""`` while it has not)."""

    REPORTED = "reported"  # a worker reported success or failure
    TIMED_OUT = "timed_out"  # its deadline passed first (the coordinator's timer)
    LOST = "lost"  # no heartbeat within the heartbeat timeout
    CANCELLED = "cancelled"  # the workflow or its node ended first


class IllegalTransition(HeadwaterError):
    """Raised when a history event does not fit the state (a corrupt or foreign history)."""


@dataclass
class TaskState:
    """One task and its current attempt. Times in ms since the epoch.

    Attributes:
        deadline_ms: when the attempt times out (dispatch + timeout), or None.
        heartbeat_ms: the heartbeat timeout in ms, or None.
        last_seen_ms: the last report of the running attempt (start, heartbeat, ...).
        checkpoint: the last checkpoint saved by any attempt (handed to the next one).
        chunks: streamed output chunks recorded for the current attempt.
        outcome: how the current attempt ended (an ``Outcome`` value, ``""`` until then).
    """

    node: str
    index: int | None
    attempt: int
    status: TaskStatus
    dispatched_at_ms: int
    started_at_ms: int | None = None
    finished_at_ms: int | None = None
    worker: str = ""
    progress: float | None = None
    message: str = ""
    error: str = ""
    error_type: str = ""
    deadline_ms: int | None = None
    heartbeat_ms: int | None = None
    last_seen_ms: int | None = None
    checkpoint: Any = None
    chunks: int = 0
    outcome: str = ""


@dataclass
class NodeState:
    """One node. Map nodes count their children; results keep input order.

    Attributes:
        failed: map children that failed for good (a ``continue_on_error`` map goes on).
        failure: the error object of the node's final failure (see ``error_object``),
            handed to its error handler as ``${error}``.
    """

    status: NodeStatus = NodeStatus.PENDING
    total: int | None = None
    next_index: int = 0
    running: int = 0
    done: int = 0
    results: list[Any] | None = None
    error: str = ""
    failed: int = 0
    failure: dict[str, Any] | None = None


def error_object(node: str, index: int | None, attempts: int, error_type: str,
                 message: str) -> dict[str, Any]:
    """What a failure looks like to an error handler (``${error}``) and, wrapped as
    ``{"error": ...}``, to the dependents of a ``continue_on_error`` node."""
    return {"node": node, "index": index, "attempts": attempts, "type": error_type,
            "message": message}


@dataclass
class TimerState:
    """A pending durable timer that will dispatch ``attempt`` of the task."""

    fire_at_ms: int
    node: str
    index: int | None
    attempt: int


@dataclass
class WorkflowState:
    """Everything the coordinator knows about one workflow (the table's value)."""

    workflow_id: str
    spec_doc: Any
    input: Any
    tenant: str | None
    name: str
    created_at_ms: int
    updated_at_ms: int
    seq: int = 0
    status: WorkflowStatus = WorkflowStatus.RUNNING
    nodes: dict[str, NodeState] = field(default_factory=dict)
    tasks: dict[str, TaskState] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    timers: dict[str, TimerState] = field(default_factory=dict)
    open_nodes: int = 0
    output: Any = None
    error: str = ""
    spec_error: str = ""
    _spec: WorkflowSpec | None = field(default=None, repr=False, compare=False)

    @property
    def spec(self) -> WorkflowSpec:
        """The parsed spec (cached). Raises ``SpecError`` if the document was invalid."""
        if self._spec is None:
            self._spec = parse_spec(self.spec_doc)
        return self._spec

    def resolve_input(self, template: Any, item: Any = None, index: int | None = None,
                      error: Any = None) -> Any:
        """Resolve a template against this workflow's input and node outputs."""
        return resolve(template, self.input, self.outputs, item, index, error)


def task_timers(task: TaskState, key: str) -> list[tuple[str, int]]:
    """The timers implied by a task's state, as ``(timer id, fire at ms)``: the deadline
    of a queued or running attempt, and the lease of a running one (last report +
    heartbeat timeout). They are not stored: the coordinator arms them from the state,
    and the state machine checks them again when they fire."""
    out: list[tuple[str, int]] = []
    if task.status.live and task.deadline_ms is not None:
        out.append((task_timer_id(DEADLINE_TIMER, key, task.attempt), task.deadline_ms))
    if (task.status is TaskStatus.RUNNING and task.heartbeat_ms is not None
            and task.last_seen_ms is not None):
        out.append((task_timer_id(LEASE_TIMER, key, task.attempt),
                    task.last_seen_ms + task.heartbeat_ms))
    return out


def new_state(event: ev.WorkflowAccepted) -> WorkflowState:
    """The state right after ``WorkflowAccepted`` (seq 1)."""
    name = event.spec.get("name") if isinstance(event.spec, dict) else None
    state = WorkflowState(
        workflow_id=event.workflow_id,
        spec_doc=event.spec,
        input=event.input,
        tenant=event.tenant,
        name=name if isinstance(name, str) else "",
        created_at_ms=event.at_ms,
        updated_at_ms=event.at_ms,
    )
    try:
        spec = state.spec
    except SpecError as e:
        state.spec_error = str(e)
        return state
    state.nodes = {n.id: NodeState() for n in spec.nodes}
    state.open_nodes = len(spec.nodes)
    return state


def evolve(state: WorkflowState | None, event: ev.HistoryEvent) -> WorkflowState:
    """Apply one history event to ``state`` (in place) and return it.

    Args:
        state: the state before (``None`` before the first event); it is modified.
        event: the next event; its ``seq`` must be ``state.seq + 1``.

    Returns:
        The state after the event.

    Raises:
        IllegalTransition: the event's seq or content does not fit the state.
    """
    body = event.body
    if state is None:
        if not isinstance(body, ev.WorkflowAccepted) or event.seq != 1:
            raise IllegalTransition(
                f"expected WorkflowAccepted at seq 1, got {event.type} at seq {event.seq}"
            )
        state = new_state(body)
    elif event.seq != state.seq + 1:
        raise IllegalTransition(f"expected seq {state.seq + 1}, got {event.seq}")
    elif state.status.terminal:
        raise IllegalTransition(f"workflow is {state.status.value}; got {event.type}")
    else:
        _apply(state, body)
    state.seq = event.seq
    state.updated_at_ms = body.at_ms
    return state


def _task(state: WorkflowState, node: str, index: int | None) -> TaskState:
    key = task_key(node, index)
    try:
        return state.tasks[key]
    except KeyError:
        raise IllegalTransition(f"no task {key} in workflow {state.workflow_id}") from None


def _node(state: WorkflowState, node_id: str) -> NodeState:
    try:
        return state.nodes[node_id]
    except KeyError:
        raise IllegalTransition(f"no node {node_id} in workflow {state.workflow_id}") from None


def _apply(state: WorkflowState, body: ev.Body) -> None:
    if isinstance(body, ev.TaskDispatched):
        _dispatched(state, body)
    elif isinstance(body, ev.TaskStarted):
        t = _task(state, body.node, body.index)
        t.status, t.started_at_ms, t.worker = TaskStatus.RUNNING, body.at_ms, body.worker
        t.last_seen_ms = body.at_ms
    elif isinstance(body, ev.TaskProgressed | ev.TaskHeartbeated | ev.TaskCheckpointed
                    | ev.TaskOutputStreamed):
        _signs_of_life(state, body)
    elif isinstance(body, ev.TaskSucceeded):
        _succeeded(state, body)
    elif isinstance(body, ev.TaskFailed):
        _failed(state, body)
    elif isinstance(body, ev.TaskCancelled):
        _cancelled(state, body)
    elif isinstance(body, ev.ReportDiscarded):
        pass  # recorded for the audit trail; it changes nothing
    elif isinstance(body, ev.TimerScheduled):
        state.timers[body.timer_id] = TimerState(
            body.fire_at_ms, body.node, body.index, body.attempt)
        _task(state, body.node, body.index).status = TaskStatus.RETRY_WAIT
        if body.index is not None:
            _node(state, body.node).running += 1  # the retry keeps its map slot
    elif isinstance(body, ev.TimerFired):
        _timer_fired(state, body)
    elif isinstance(body, ev.MapExpanded):
        node = _node(state, body.node)
        node.status, node.total, node.results = NodeStatus.RUNNING, body.count, [None] * body.count
    elif isinstance(body, ev.NodeFinished):
        _node_finished(state, body)
    elif isinstance(body, ev.WorkflowSucceeded):
        _terminal(state, WorkflowStatus.SUCCEEDED)
        state.output = body.output
    elif isinstance(body, ev.WorkflowFailed):
        _terminal(state, WorkflowStatus.FAILED)
        state.error = body.error
    elif isinstance(body, ev.WorkflowCancelled):
        _terminal(state, WorkflowStatus.CANCELLED)
        state.error = body.reason
    else:
        raise IllegalTransition(f"unexpected {type(body).__name__} in a running workflow")


def _dispatched(state: WorkflowState, body: ev.TaskDispatched) -> None:
    key = task_key(body.node, body.index)
    node = _node(state, body.node)
    if body.attempt == 1:
        node.status = NodeStatus.RUNNING
        # Tasks 0..next_index-1 exist (a task node: 1), so a snapshot can list them.
        node.next_index = max(node.next_index, (body.index or 0) + 1)
        if body.index is not None:
            node.running += 1  # a retry reuses the slot its TimerScheduled kept
    state.tasks[key] = TaskState(
        node=body.node, index=body.index, attempt=body.attempt,
        status=TaskStatus.DISPATCHED, dispatched_at_ms=body.at_ms,
        deadline_ms=body.deadline_ms,
        heartbeat_ms=None if body.heartbeat_timeout_s is None
        else round(body.heartbeat_timeout_s * 1000),
        checkpoint=body.checkpoint,
    )


def _signs_of_life(state: WorkflowState, body: ev.TaskProgressed | ev.TaskHeartbeated
                   | ev.TaskCheckpointed | ev.TaskOutputStreamed) -> None:
    """A report from a running attempt: it renews the lease, and may carry more."""
    t = _task(state, body.node, body.index)
    t.last_seen_ms = body.at_ms
    if isinstance(body, ev.TaskProgressed):
        t.progress, t.message = body.fraction, body.message
    elif isinstance(body, ev.TaskCheckpointed):
        t.checkpoint = body.checkpoint
    elif isinstance(body, ev.TaskOutputStreamed):
        t.chunks = body.chunk_seq + 1


def _failed(state: WorkflowState, body: ev.TaskFailed) -> None:
    """An attempt failed. If it was the last (not retryable, or no attempts left) the
    node records the failure; a ``continue_on_error`` map keeps it as the item's result
    and goes on."""
    key = task_key(body.node, body.index)
    if key not in state.tasks and body.index is not None:
        # A map item whose input could not be resolved fails before any dispatch.
        node = _node(state, body.node)
        if node.total is None or not 0 <= body.index < node.total:
            raise IllegalTransition(f"no item {key} in workflow {state.workflow_id}")
        node.next_index = max(node.next_index, body.index + 1)
        node.running += 1  # as if dispatched; _child_finished gives the slot back
        state.tasks[key] = TaskState(node=body.node, index=body.index, attempt=body.attempt,
                                     status=TaskStatus.DISPATCHED, dispatched_at_ms=body.at_ms)
    t = _task(state, body.node, body.index)
    t.status, t.error, t.finished_at_ms = TaskStatus.FAILED, body.error, body.at_ms
    t.error_type, t.outcome = body.error_type, t.outcome or Outcome.REPORTED
    _child_finished(state, body.node, body.index)
    spec = state.spec.node(body.node)
    if body.retryable and body.attempt < spec.retry.max_attempts:
        return  # a TimerScheduled follows
    node = _node(state, body.node)
    node.failure = error_object(body.node, body.index, body.attempt, body.error_type,
                                body.error)
    if body.index is not None and spec.continue_on_error:
        assert node.results is not None
        node.results[body.index] = {"error": node.failure}
        node.done += 1
        node.failed += 1


def _cancelled(state: WorkflowState, body: ev.TaskCancelled) -> None:
    t = _task(state, body.node, body.index)
    if t.status is TaskStatus.RETRY_WAIT:
        state.timers.pop(retry_timer_id(task_key(body.node, body.index), t.attempt + 1), None)
    if not t.status.terminal and body.index is not None:
        state.nodes[body.node].running -= 1  # a retry wait kept its slot too
    t.status, t.outcome, t.finished_at_ms = TaskStatus.CANCELLED, Outcome.CANCELLED, body.at_ms


def _timer_fired(state: WorkflowState, body: ev.TimerFired) -> None:
    if state.timers.pop(body.timer_id, None) is not None:
        return
    parsed = parse_task_timer_id(body.timer_id)
    if parsed is None:
        raise IllegalTransition(f"no timer {body.timer_id} in workflow {state.workflow_id}")
    kind, key, _ = parsed
    t = state.tasks.get(key)
    if t is None:
        raise IllegalTransition(f"no task {key} in workflow {state.workflow_id}")
    t.outcome = Outcome.TIMED_OUT if kind == DEADLINE_TIMER else Outcome.LOST


def _succeeded(state: WorkflowState, body: ev.TaskSucceeded) -> None:
    t = _task(state, body.node, body.index)
    t.status, t.finished_at_ms, t.progress = TaskStatus.SUCCEEDED, body.at_ms, 1.0
    t.outcome = Outcome.REPORTED
    if body.index is None:
        state.outputs[body.node] = body.output
        return
    node = _node(state, body.node)
    assert node.results is not None
    node.results[body.index] = body.output
    node.done += 1
    _child_finished(state, body.node, body.index)


def _child_finished(state: WorkflowState, node_id: str, index: int | None) -> None:
    if index is not None:
        state.nodes[node_id].running -= 1


def _node_finished(state: WorkflowState, body: ev.NodeFinished) -> None:
    node = _node(state, body.node)
    if node.status.terminal:
        raise IllegalTransition(f"node {body.node} is already {node.status.value}")
    node.status = NodeStatus(body.status)
    node.error = body.error
    state.open_nodes -= 1
    if node.status is NodeStatus.SUCCEEDED and node.results is not None:
        state.outputs[body.node] = node.results
    elif node.status is NodeStatus.SKIPPED:
        state.outputs[body.node] = None
    elif node.status is NodeStatus.FAILED:
        if node.failure is None:  # failed before any attempt (a reference, a bad list)
            node.failure = error_object(body.node, None, 0, "", body.error)
        if state.spec.node(body.node).continue_on_error:
            state.outputs[body.node] = (node.results if node.results is not None
                                        else {"error": node.failure})


def _terminal(state: WorkflowState, status: WorkflowStatus) -> None:
    """End the workflow: drop timers; whatever is unfinished is cancelled."""
    state.status = status
    state.timers.clear()
    for node in state.nodes.values():
        if not node.status.terminal:
            node.status = NodeStatus.CANCELLED
            state.open_nodes -= 1
    for t in state.tasks.values():
        if not t.status.terminal:
            t.status = TaskStatus.CANCELLED
