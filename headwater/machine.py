"""The pure state machine: ``step(state, input) -> (state, history events)``.

No I/O, no clock, no randomness: time comes from the input record and retry jitter from
the dispatch id (DESIGN.md §3.4). Every decision is recorded as a history event and the
state changes only through ``state.evolve``, so replaying the history rebuilds the state.
Dispatches and timers are history events too (``TaskDispatched``, ``TimerScheduled``);
the coordinator publishes them to their topics and arms the timers.

Rules:
- a node starts when all its needs have succeeded; a map fans out over its list,
  at most ``max_concurrency`` children in flight, and its output keeps input order;
- a failed attempt is retried after ``retry.backoff_seconds`` through a durable timer
  until ``max_attempts``; then the node fails, every node downstream of it is
  ``upstream_failed``, the rest is cancelled and the workflow fails (fail fast);
- reports are fenced by attempt: a report for another attempt, an unknown task, a
  finished task or a finished workflow changes nothing and records nothing, and neither
  does a second start of a running attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from headwater import events as ev
from headwater.errors import InputReferenceError
from headwater.retry import backoff_seconds
from headwater.spec import NodeKind, NodeSpec
from headwater.state import NodeStatus, TaskStatus, WorkflowState, evolve
from headwater.topics import dispatch_id, task_key


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
        rec.record(ev.WorkflowCancelled(state.workflow_id, event.at_ms, event.reason))
    elif isinstance(event, ev.TimerFired):
        _timer_fired(rec, state, event)
    else:
        _report(rec, state, event)
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
        if not node.needs:
            _start_node(rec, node)
    _finish_if_done(rec)


def _report(rec: _Recorder, state: WorkflowState, report: ev.Report) -> None:
    task = state.tasks.get(task_key(report.node, report.index))
    if task is None or task.attempt != report.attempt or task.status.terminal:
        return
    if task.status is TaskStatus.RETRY_WAIT:
        return
    if isinstance(report, ev.TaskStarted) and task.status is TaskStatus.RUNNING:
        return  # a redelivered start: already recorded
    if isinstance(report, ev.TaskStarted | ev.TaskProgressed):
        rec.record(report)
    elif isinstance(report, ev.TaskSucceeded):
        rec.record(report)
        _task_succeeded(rec, report)
    else:
        _task_failed(rec, report)


def _task_succeeded(rec: _Recorder, report: ev.TaskSucceeded) -> None:
    state = _state(rec)
    spec = state.spec.node(report.node)
    if spec.kind is NodeKind.TASK:
        _node_succeeded(rec, report.node)
        return
    node = state.nodes[report.node]
    _fill_map(rec, spec)
    if node.total is not None and node.done == node.total:
        _node_succeeded(rec, report.node)


def _task_failed(rec: _Recorder, report: ev.TaskFailed) -> None:
    state = _state(rec)
    spec = state.spec.node(report.node)
    rec.record(report)
    if report.retryable and report.attempt < spec.retry.max_attempts:
        did = dispatch_id(report.workflow_id, report.node, report.index, report.attempt)
        delay_ms = round(backoff_seconds(spec.retry, report.attempt, did) * 1000)
        rec.record(ev.TimerScheduled(
            workflow_id=report.workflow_id,
            timer_id=f"retry:{task_key(report.node, report.index)}:{report.attempt + 1}",
            fire_at_ms=report.at_ms + delay_ms,
            node=report.node, index=report.index, attempt=report.attempt + 1,
            at_ms=report.at_ms,
        ))
        return
    where = task_key(report.node, report.index)
    tries = f"after {report.attempt} attempt{'s' if report.attempt > 1 else ''}"
    error = f"{report.error_type}: {report.error}" if report.error_type else report.error
    _fail_node(rec, report.node, f"{where} failed {tries}: {error}")


def _timer_fired(rec: _Recorder, state: WorkflowState, event: ev.TimerFired) -> None:
    timer = state.timers.get(event.timer_id)
    if timer is None:
        return
    rec.record(event)
    spec = state.spec.node(timer.node)
    _dispatch(rec, spec, timer.index, timer.attempt)


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
        _fail_node(rec, spec.id, f"map {spec.id}: {e}")
        return
    if not isinstance(items, list):
        _fail_node(rec, spec.id, f"map {spec.id}: 'over' gave {type(items).__name__}, not a list")
        return
    rec.record(ev.MapExpanded(state.workflow_id, spec.id, len(items), rec.at_ms))
    if not items:
        _node_succeeded(rec, spec.id)
        return
    _fill_map(rec, spec)


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
    try:
        item = _map_item(state, spec, index)
        task_input = state.resolve_input(spec.input, item, index)
    except InputReferenceError as e:
        _fail_node(rec, spec.id, f"{task_key(spec.id, index)}: {e}")
        return
    rec.record(ev.TaskDispatched(
        workflow_id=state.workflow_id, node=spec.id, index=index, attempt=attempt,
        task=spec.task, queue=spec.queue, input=task_input, at_ms=rec.at_ms,
        timeout_s=spec.timeout,
    ))


def _map_item(state: WorkflowState, spec: NodeSpec, index: int | None) -> Any:
    if index is None:
        return None
    items = state.resolve_input(spec.over)
    return items[index]


def _node_succeeded(rec: _Recorder, node_id: str) -> None:
    state = rec.record(ev.NodeFinished(_state(rec).workflow_id, node_id,
                                       NodeStatus.SUCCEEDED.value, rec.at_ms))
    for dep_id in _dependents(state, node_id):
        dep = state.spec.node(dep_id)
        if state.nodes[dep_id].status is NodeStatus.PENDING and all(
            state.nodes[n].status is NodeStatus.SUCCEEDED for n in dep.needs
        ):
            _start_node(rec, dep)
    _finish_if_done(rec)


def _fail_node(rec: _Recorder, node_id: str, error: str) -> None:
    """Fail a node for good: downstream nodes are upstream_failed, then the workflow fails."""
    state = _state(rec)
    wf = state.workflow_id
    state = rec.record(ev.NodeFinished(wf, node_id, NodeStatus.FAILED.value, rec.at_ms, error))
    downstream = _descendants(state, node_id)
    for spec in state.spec.nodes:
        if spec.id in downstream and not state.nodes[spec.id].status.terminal:
            rec.record(ev.NodeFinished(wf, spec.id, NodeStatus.UPSTREAM_FAILED.value,
                                       rec.at_ms, f"needs {node_id}, which failed"))
    rec.record(ev.WorkflowFailed(wf, rec.at_ms, error))


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
