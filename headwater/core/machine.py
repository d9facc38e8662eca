"""The pure state machine: ``step(state, input) -> (state, history events)``.

No I/O, no clock, no randomness: time comes from the input record and retry jitter from
the dispatch id (DESIGN.md §3.4). Every decision is recorded as a history event and the
state changes only through ``state.evolve``, so replaying the history rebuilds the state.
Dispatches and timers are history events too (``TaskDispatched``, ``TimerScheduled``);
the coordinator publishes them to their topics and arms the timers.

Rules:
- a node starts when all its needs have finished usable (succeeded, or failed with
  ``continue_on_error``); a node that needs a skipped node, or a failed one whose error
  went to an error route, is skipped. A map fans out over its list, at most
  ``max_concurrency`` children in flight, and its output keeps input order;
- a failed attempt is retried after ``retry.backoff_seconds`` through a durable timer
  until ``max_attempts``. An attempt fails when the worker says so, when its deadline
  (``timeout`` after dispatch) passes, or when it is lost (no report within
  ``heartbeat_timeout``); the last two count as attempts like any other;
- a node that fails for good (the last attempt failed, a non-retryable error, or a
  reference that cannot be resolved) is ``failed``, and its unfinished map children are
  cancelled. Then, in this order: with ``continue_on_error`` its dependents run and see
  ``{"error": ...}`` as its output (a map of that kind runs every item and keeps the
  error objects among its results); with ``on_error: H`` the handler H runs with the
  error as its input and the node's dependents are skipped; otherwise every node
  downstream of it is ``upstream_failed``, every unfinished attempt is cancelled, the
  other nodes are cancelled and the workflow fails (fail fast);
- an error handler whose node did not fail is skipped; a workflow in which every node
  finished (none failed without a route) succeeds;
- cancelling cancels every unfinished attempt (``TaskCancelled``, which workers obey),
  cancels the unfinished nodes and ends the workflow ``cancelled``; pending timers go;
- reports are fenced by attempt: a report for an unknown task or a finished workflow,
  a duplicate outcome, a second start, a report after the attempt's outcome changes
  nothing and records nothing, except that a late outcome of an attempt that had timed
  out, was lost, was cancelled or was superseded by a later attempt is recorded as
  ``ReportDiscarded``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from headwater.core import events as ev
from headwater.core.fencing import stale_reason
from headwater.core.ids import (
    DEADLINE_TIMER,
    dispatch_id,
    parse_task_timer_id,
    retry_timer_id,
    task_key,
)
from headwater.core.retry import backoff_seconds
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.state import NodeStatus, TaskState, TaskStatus, WorkflowState, evolve
from headwater.errors import InputReferenceError


@dataclass
class Step:
    """The result of one ``step``: the new state and what was recorded, in seq order."""

    state: WorkflowState | None
    events: list[ev.HistoryEvent] = field(default_factory=list)

    @property
    def dispatches(self) -> list[ev.TaskDispatched]:
        """The dispatches among the recorded events."""
        return [e.body for e in self.events if isinstance(e.body, ev.TaskDispatched)]


class _Recorder:
    """Numbers bodies and evolves the state through them, as they are decided."""

    def __init__(self, state: WorkflowState | None, at_ms: int) -> None:
        self.state = state
        self.at_ms = at_ms
        self.events: list[ev.HistoryEvent] = []
        self.finished: deque[str] = deque()  # nodes whose consequences are pending
        self.settling = False

    def record(self, body: ev.Body) -> WorkflowState:
        seq = (self.state.seq if self.state else 0) + 1
        event = ev.HistoryEvent(body.workflow_id, seq, body)
        self.state = evolve(self.state, event)
        self.events.append(event)
        return self.state


def step(state: WorkflowState | None, event: ev.Input) -> Step:
    """Apply one input to a workflow.

    Args:
        state: the workflow's state, or ``None`` if it has none yet. It is modified in
            place (the caller hands it over), which keeps the cost of a step
            independent of the workflow's size.
        event: a decoded input record.

    Returns:
        The new state and the history events recorded (possibly none). Never raises for
        a well-typed input: invalid specs and bad references fail the workflow as data.
    """
    rec = _Recorder(state, event.at_ms)
    if isinstance(event, ev.WorkflowSubmitted):
        if state is None:
            _submit(rec, event)
    elif state is None or state.status.terminal:
        pass
    elif isinstance(event, ev.CancelRequested):
        reason = event.reason or "cancel requested"
        _end_workflow(rec, ev.WorkflowCancelled(state.workflow_id, event.at_ms, event.reason),
                      reason)
    elif isinstance(event, ev.TimerFired):
        _timer_fired(rec, state, event)
    else:
        _report(rec, state, event)
    return Step(rec.state, rec.events)


def fail(state: WorkflowState | None, event: ev.Input, error: str) -> Step:
    """Fail the workflow of ``event`` as data, for an input that could not be applied
    (its consequences do not fit a Kafka record, or ``step`` has a bug).

    Args:
        state: the workflow's state before ``event`` (modified in place).
        event: the input that could not be applied.
        error: why, recorded in ``WorkflowFailed``.

    Returns:
        The state and events: unfinished attempts and nodes cancelled, then
        ``WorkflowFailed``. A submission of a new workflow is accepted first. Nothing
        when the workflow is unknown (for any other input) or already terminal.
    """
    rec = _Recorder(state, event.at_ms)
    if state is None and isinstance(event, ev.WorkflowSubmitted):
        state = rec.record(ev.WorkflowAccepted(event.workflow_id, event.at_ms, event.spec,
                                               event.input, event.tenant))
        if state.spec_error:
            error = f"invalid spec: {state.spec_error}"
    if state is not None and not state.status.terminal:
        _end_workflow(rec, ev.WorkflowFailed(state.workflow_id, event.at_ms, error),
                      f"workflow failed: {error}")
    return Step(rec.state, rec.events)


def _submit(rec: _Recorder, event: ev.WorkflowSubmitted) -> None:
    state = rec.record(
        ev.WorkflowAccepted(event.workflow_id, event.at_ms, event.spec, event.input, event.tenant)
    )
    if state.spec_error:
        error = f"invalid spec: {state.spec_error}"
        rec.record(ev.WorkflowFailed(state.workflow_id, event.at_ms, error))
        return
    for node in state.spec.nodes:
        if not node.needs and state.spec.handler_of(node.id) is None:
            _start_node(rec, node)
    _finish_if_done(rec)


# -- reports -------------------------------------------------------------------------------

def _report(rec: _Recorder, state: WorkflowState, report: ev.Report) -> None:
    task = state.tasks.get(task_key(report.node, report.index))
    if task is None or report.attempt > task.attempt:
        return
    if isinstance(report, ev.TaskSucceeded | ev.TaskFailed):
        _outcome(rec, task, report)
        return
    if report.attempt != task.attempt or not task.status.live:
        return
    if isinstance(report, ev.TaskStarted) and task.status is TaskStatus.RUNNING:
        return  # a redelivered start: already recorded
    if isinstance(report, ev.TaskOutputStreamed) and report.chunk_seq < task.chunks:
        return  # a redelivered chunk
    rec.record(report)


def _outcome(rec: _Recorder, task: TaskState, report: ev.TaskSucceeded | ev.TaskFailed) -> None:
    stale = stale_reason(task, report.attempt)
    if stale:
        rec.record(ev.ReportDiscarded(report.workflow_id, report.node, report.index,
                                      report.attempt, report.at_ms, type(report).__name__,
                                      stale))
    elif not task.status.live:
        return  # a duplicate of the outcome already recorded
    elif isinstance(report, ev.TaskSucceeded):
        rec.record(report)
        _task_succeeded(rec, report)
    else:
        _task_failed(rec, report)


def _task_succeeded(rec: _Recorder, report: ev.TaskSucceeded) -> None:
    state = _state(rec)
    spec = state.spec.node(report.node)
    if spec.kind is NodeKind.TASK:
        _finish(rec, report.node, NodeStatus.SUCCEEDED)
        return
    _map_progress(rec, spec)


def _map_progress(rec: _Recorder, spec: NodeSpec) -> None:
    """A map child finished: fill the free slots, or finish the map if it was the last."""
    _fill_map(rec, spec)
    node = _state(rec).nodes[spec.id]
    if node.total is not None and node.done == node.total and not node.status.terminal:
        if node.failed:
            _finish(rec, spec.id, NodeStatus.FAILED,
                    f"{node.failed} of {node.total} items of {spec.id} failed")
        else:
            _finish(rec, spec.id, NodeStatus.SUCCEEDED)


def _task_failed(rec: _Recorder, report: ev.TaskFailed) -> None:
    state = _state(rec)
    spec = state.spec.node(report.node)
    rec.record(report)
    if report.retryable and report.attempt < spec.retry.max_attempts:
        did = dispatch_id(report.workflow_id, report.node, report.index, report.attempt)
        delay_ms = round(backoff_seconds(spec.retry, report.attempt, did) * 1000)
        rec.record(ev.TimerScheduled(
            workflow_id=report.workflow_id,
            timer_id=retry_timer_id(task_key(report.node, report.index), report.attempt + 1),
            fire_at_ms=report.at_ms + delay_ms,
            node=report.node, index=report.index, attempt=report.attempt + 1,
            at_ms=report.at_ms,
        ))
        return
    if report.index is not None and spec.continue_on_error:
        _map_progress(rec, spec)  # the error is the item's result; the map goes on
        return
    where = task_key(report.node, report.index)
    tries = f"after {report.attempt} attempt{'s' if report.attempt > 1 else ''}"
    error = f"{report.error_type}: {report.error}" if report.error_type else report.error
    _node_failed(rec, report.node, f"{where} failed {tries}: {error}")


# -- timers --------------------------------------------------------------------------------

def _timer_fired(rec: _Recorder, state: WorkflowState, event: ev.TimerFired) -> None:
    timer = state.timers.get(event.timer_id)
    if timer is not None:
        rec.record(event)
        _dispatch(rec, state.spec.node(timer.node), timer.index, timer.attempt)
        return
    parsed = parse_task_timer_id(event.timer_id)
    if parsed is None:
        return
    kind, key, attempt = parsed
    task = state.tasks.get(key)
    if task is None or task.attempt != attempt or not task.status.live:
        return
    spec = state.spec.node(task.node)
    if kind == DEADLINE_TIMER:
        if task.deadline_ms is None or event.at_ms < task.deadline_ms:
            return
        error_type = "TimeoutError"
        error = f"timed out: no outcome {spec.timeout:g} s after dispatch"
    else:
        if (task.status is not TaskStatus.RUNNING or task.heartbeat_ms is None
                or task.last_seen_ms is None
                or event.at_ms < task.last_seen_ms + task.heartbeat_ms):
            return
        error_type = "HeartbeatTimeout"
        error = (f"lost: no heartbeat from worker {task.worker or '(unknown)'} for "
                 f"{task.heartbeat_ms / 1000:g} s")
    rec.record(event)
    _task_failed(rec, ev.TaskFailed(state.workflow_id, task.node, task.index, attempt,
                                    event.at_ms, error, error_type, True))


# -- starting nodes ------------------------------------------------------------------------

def _start_node(rec: _Recorder, spec: NodeSpec) -> None:
    state = _state(rec)
    if state.status.terminal:
        return
    if spec.kind is NodeKind.TASK:
        _dispatch(rec, spec, None, 1)
        return
    try:
        items = state.resolve_input(spec.over)
    except InputReferenceError as e:
        _node_failed(rec, spec.id, f"map {spec.id}: {e}")
        return
    if not isinstance(items, list):
        _node_failed(rec, spec.id,
                     f"map {spec.id}: 'over' gave {type(items).__name__}, not a list")
        return
    rec.record(ev.MapExpanded(state.workflow_id, spec.id, len(items), rec.at_ms))
    if not items:
        _finish(rec, spec.id, NodeStatus.SUCCEEDED)
        return
    _map_progress(rec, spec)


def _fill_map(rec: _Recorder, spec: NodeSpec) -> None:
    """Dispatch map children until ``max_concurrency`` are in flight or none are left."""
    state = _state(rec)
    node = state.nodes[spec.id]
    assert node.total is not None
    limit = spec.max_concurrency or node.total
    while node.next_index < node.total and node.running < limit and not node.status.terminal:
        _dispatch(rec, spec, node.next_index, 1)


def _dispatch(rec: _Recorder, spec: NodeSpec, index: int | None, attempt: int) -> None:
    state = _state(rec)
    source = state.spec.handler_of(spec.id)
    error = state.nodes[source].failure if source is not None else None
    try:
        item = _map_item(state, spec, index)
        if source is not None and spec.input is None:
            task_input: Any = {"error": error}
        else:
            task_input = state.resolve_input(spec.input, item, index, error)
    except InputReferenceError as e:
        if index is not None and spec.continue_on_error:
            # This item fails on its own (it never runs); the map goes on.
            rec.record(ev.TaskFailed(state.workflow_id, spec.id, index, attempt, rec.at_ms,
                                     f"{task_key(spec.id, index)}: {e}",
                                     InputReferenceError.__name__, retryable=False))
            return
        _node_failed(rec, spec.id, f"{task_key(spec.id, index)}: {e}")
        return
    previous = state.tasks.get(task_key(spec.id, index))
    rec.record(ev.TaskDispatched(
        workflow_id=state.workflow_id, node=spec.id, index=index, attempt=attempt,
        task=spec.task, queue=spec.queue, input=task_input, at_ms=rec.at_ms,
        timeout_s=spec.timeout, heartbeat_timeout_s=spec.heartbeat_timeout,
        checkpoint=previous.checkpoint if previous is not None else None,
    ))


def _map_item(state: WorkflowState, spec: NodeSpec, index: int | None) -> Any:
    if index is None:
        return None
    items = state.resolve_input(spec.over)
    return items[index]


# -- finishing nodes -----------------------------------------------------------------------

def _finish(rec: _Recorder, node_id: str, status: NodeStatus, error: str = "") -> None:
    """Record that a node finished, then work out what follows, breadth first and without
    recursion (a skip can cascade down a 10,000-node chain)."""
    rec.record(ev.NodeFinished(_state(rec).workflow_id, node_id, status.value, rec.at_ms, error))
    rec.finished.append(node_id)
    if rec.settling:
        return
    rec.settling = True
    try:
        while rec.finished and not _state(rec).status.terminal:
            _after_finish(rec, rec.finished.popleft())
    finally:
        rec.settling = False
        rec.finished.clear()
    _finish_if_done(rec)


def _after_finish(rec: _Recorder, node_id: str) -> None:
    state = _state(rec)
    spec = state.spec.node(node_id)
    if spec.on_error is not None:
        if state.nodes[node_id].status is NodeStatus.FAILED:
            _start_node(rec, state.spec.node(spec.on_error))
        else:
            _skip(rec, spec.on_error, f"{node_id} did not fail")
    for dep_id in _dependents(state, node_id):
        _settle(rec, dep_id)


def _settle(rec: _Recorder, node_id: str) -> None:
    """Skip a pending node as soon as a node it needs finished unusable; start it once
    every node it needs finished usable."""
    state = _state(rec)
    if state.status.terminal or state.nodes[node_id].status is not NodeStatus.PENDING:
        return
    spec = state.spec.node(node_id)
    for need in spec.needs:
        status = state.nodes[need].status
        if status.terminal and not _usable(state, need):
            why = "was skipped" if status is NodeStatus.SKIPPED else "failed"
            _skip(rec, node_id, f"needs {need}, which {why}")
            return
    if all(state.nodes[n].status.terminal for n in spec.needs):
        _start_node(rec, spec)


def _usable(state: WorkflowState, node_id: str) -> bool:
    """Whether dependents of a finished node may run: it succeeded, or failed with
    ``continue_on_error`` (they see its error)."""
    status = state.nodes[node_id].status
    return status is NodeStatus.SUCCEEDED or (
        status is NodeStatus.FAILED and state.spec.node(node_id).continue_on_error)


def _skip(rec: _Recorder, node_id: str, why: str) -> None:
    if _state(rec).nodes[node_id].status is NodeStatus.PENDING:
        _finish(rec, node_id, NodeStatus.SKIPPED, why)


def _node_failed(rec: _Recorder, node_id: str, error: str) -> None:
    """A node failed for good: cancel its unfinished map children, then go on as its
    ``continue_on_error`` or ``on_error`` says, or fail the workflow (fail fast)."""
    state = _state(rec)
    spec = state.spec.node(node_id)
    _cancel_tasks(rec, _node_tasks(state, node_id), f"node {node_id} failed")
    if spec.continue_on_error or spec.on_error is not None:
        _finish(rec, node_id, NodeStatus.FAILED, error)
        return
    wf = state.workflow_id
    state = rec.record(ev.NodeFinished(wf, node_id, NodeStatus.FAILED.value, rec.at_ms, error))
    downstream = _descendants(state, node_id)
    for n in state.spec.nodes:
        if n.id in downstream and not state.nodes[n.id].status.terminal:
            rec.record(ev.NodeFinished(wf, n.id, NodeStatus.UPSTREAM_FAILED.value,
                                       rec.at_ms, f"needs {node_id}, which failed"))
    _end_workflow(rec, ev.WorkflowFailed(wf, rec.at_ms, error), f"workflow failed: {error}")


def _end_workflow(rec: _Recorder, terminal: ev.WorkflowFailed | ev.WorkflowCancelled,
                  reason: str) -> None:
    """Cancel every unfinished attempt and node, then record the terminal event."""
    state = _state(rec)
    _cancel_tasks(rec, list(state.tasks.values()), reason)
    for n in state.spec.nodes if not state.spec_error else ():
        if not state.nodes[n.id].status.terminal:
            rec.record(ev.NodeFinished(state.workflow_id, n.id, NodeStatus.CANCELLED.value,
                                       rec.at_ms, reason))
    rec.record(terminal)


def _cancel_tasks(rec: _Recorder, tasks: list[TaskState], reason: str) -> None:
    """Record ``TaskCancelled`` for each task that is queued, running or waiting to retry."""
    wf = _state(rec).workflow_id
    for t in tasks:
        if not t.status.terminal:
            rec.record(ev.TaskCancelled(wf, t.node, t.index, t.attempt, rec.at_ms, reason))


def _node_tasks(state: WorkflowState, node_id: str) -> list[TaskState]:
    node = state.nodes[node_id]
    if node.total is None:
        return []  # a task node's own task has just ended
    return [state.tasks[task_key(node_id, i)] for i in range(node.next_index)]


def _finish_if_done(rec: _Recorder) -> None:
    state = _state(rec)
    if state.status.terminal or state.open_nodes > 0:
        return
    try:
        output = _workflow_output(state)
    except InputReferenceError as e:
        rec.record(ev.WorkflowFailed(state.workflow_id, rec.at_ms, f"output: {e}"))
        return
    rec.record(ev.WorkflowSucceeded(state.workflow_id, rec.at_ms, output))


def _workflow_output(state: WorkflowState) -> Any:
    """The spec's ``output`` template, or the sink nodes' outputs by node id."""
    if state.spec.output is not None:
        return state.resolve_input(state.spec.output)
    needed = {d for n in state.spec.nodes for d in n.needs}
    sinks = [n.id for n in state.spec.nodes if n.id not in needed]
    return {n: state.outputs.get(n) for n in sinks}


def _dependents(state: WorkflowState, node_id: str) -> list[str]:
    return _dependents_index(state).get(node_id, [])


def _dependents_index(state: WorkflowState) -> dict[str, list[str]]:
    cached: dict[str, list[str]] | None = state.spec.__dict__.get("_dependents")
    if cached is None:
        cached = state.spec.dependents()
        object.__setattr__(state.spec, "_dependents", cached)
    return cached


def _descendants(state: WorkflowState, node_id: str) -> set[str]:
    seen: set[str] = set()
    stack = [node_id]
    while stack:
        for dep in _dependents(state, stack.pop()):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def _state(rec: _Recorder) -> WorkflowState:
    assert rec.state is not None
    return rec.state
