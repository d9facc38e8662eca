"""``evolve``: how one history event changes a workflow's state.

``evolve`` is the only code that changes a ``WorkflowState``. The state machine
(``headwater.core.machine``) decides which events happen and evolves the state through
them, so folding a workflow's recorded history through ``evolve`` gives the same state
(docs/architecture.md, invariant 1): that is what replay does. Each event type has one
small handler, found in ``EVENT_HANDLERS`` by the event's type; a new event type is a new
handler and one line there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.core import events as ev
from headwater.core import evolve_schedule as schedules
from headwater.core import evolve_waits as waits
from headwater.core.ids import DEADLINE_TIMER, parse_task_timer_id, retry_timer_id, task_key
from headwater.core.state import (
    NodeState,
    TaskState,
    TimerState,
    WorkflowState,
    error_object,
    new_state,
    set_finished_output,
)
from headwater.core.status import AttemptEnd, NodeStatus, TaskStatus, WorkflowStatus
from headwater.errors import HeadwaterError


class IllegalTransition(HeadwaterError):
    """Raised when a history event does not fit the state (a corrupt or foreign history)."""


def evolve(state: WorkflowState | None, event: ev.HistoryEvent) -> WorkflowState:
    """Apply one history event to ``state`` (in place) and return it.

    Args:
        state: the state before (``None`` before the first event); it is modified.
        event: the next event; its ``seq`` must be ``state.seq + 1``.

    Returns:
        The state after the event.

    Raises:
        IllegalTransition: the event's seq or content does not fit the state; the message
            names what was expected and what came.
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
        handler = EVENT_HANDLERS.get(type(body))
        if handler is None:
            raise IllegalTransition(f"unexpected {type(body).__name__} in a running workflow")
        handler(state, body)
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


# -- attempts ------------------------------------------------------------------------------

def _dispatched(state: WorkflowState, body: ev.TaskDispatched) -> None:
    key = task_key(body.node, body.index)
    node = _node(state, body.node)
    if body.attempt == state.first_attempt:
        node.status = NodeStatus.RUNNING
        # Tasks 0..next_index-1 exist (a task node: 1), so a snapshot can list them.
        node.next_index = max(node.next_index, (body.index or 0) + 1)
        if _fans_out(state, body.node):
            node.running += 1  # a retry reuses the slot its TimerScheduled kept
    state.tasks[key] = TaskState(
        node=body.node, index=body.index, attempt=body.attempt,
        status=TaskStatus.DISPATCHED, dispatched_at_ms=body.at_ms,
        deadline_ms=body.deadline_ms,
        heartbeat_ms=None if body.heartbeat_timeout_s is None
        else round(body.heartbeat_timeout_s * 1000),
        checkpoint=body.checkpoint,
    )


def _started(state: WorkflowState, body: ev.TaskStarted) -> None:
    t = _task(state, body.node, body.index)
    t.status, t.started_at_ms, t.worker = TaskStatus.RUNNING, body.at_ms, body.worker
    t.last_seen_ms = body.at_ms


def _heartbeated(state: WorkflowState, body: ev.TaskHeartbeated) -> None:
    """A report from a running attempt renews its lease; so does every report below."""
    _task(state, body.node, body.index).last_seen_ms = body.at_ms


def _progressed(state: WorkflowState, body: ev.TaskProgressed) -> None:
    t = _task(state, body.node, body.index)
    t.last_seen_ms = body.at_ms
    t.progress, t.message = body.fraction, body.message


def _checkpointed(state: WorkflowState, body: ev.TaskCheckpointed) -> None:
    t = _task(state, body.node, body.index)
    t.last_seen_ms = body.at_ms
    t.checkpoint = body.checkpoint


def _streamed(state: WorkflowState, body: ev.TaskOutputStreamed) -> None:
    t = _task(state, body.node, body.index)
    t.last_seen_ms = body.at_ms
    t.chunks = body.chunk_seq + 1


def _succeeded(state: WorkflowState, body: ev.TaskSucceeded) -> None:
    t = _task(state, body.node, body.index)
    t.status, t.finished_at_ms, t.progress = TaskStatus.SUCCEEDED, body.at_ms, 1.0
    t.outcome = AttemptEnd.REPORTED
    spec = state.spec.node(body.node)
    if spec.schedule is not None:
        schedules.run_ended(state, body.node, body.index)  # its output is the run's own
        return
    if spec.loop is not None:
        if body.index is not None and body.index % 2 == 1:
            _tool_done(state, body.node, body.index, body.output)
        return  # a decision: its LoopStepDecided follows
    if not spec.fans_out:
        state.outputs[body.node] = body.output
        return
    node = _node(state, body.node)
    assert node.results is not None and body.index is not None
    node.results[body.index] = body.output
    node.done += 1
    _child_finished(state, body.node, body.index)


def _tool_done(state: WorkflowState, node_id: str, index: int, output: Any) -> None:
    """A loop's tool (task ``2k+1``) succeeded: its call joins the transcript."""
    node = _node(state, node_id)
    decided = node.decision
    if decided is None or decided.get("step") != index // 2 or "tool" not in decided:
        raise IllegalTransition(f"loop {node_id}: no tool was decided for step {index // 2}")
    entry = {"step": decided["step"], "tool": decided["tool"], "input": decided["input"],
             "output": output}
    if node.transcript is None:
        node.transcript = []
    node.transcript.append(entry)  # in place: the cost stays flat in its length


def _failed(state: WorkflowState, body: ev.TaskFailed) -> None:
    """An attempt failed. If it was the last (not retryable, or no attempts left) the
    node records the failure; a ``continue_on_error`` map keeps it as the item's result
    and goes on."""
    item = body.index is not None and _fans_out(state, body.node)  # a map-like item
    if task_key(body.node, body.index) not in state.tasks and item:
        _undispatched_item(state, body)
    t = _task(state, body.node, body.index)
    t.status, t.error, t.finished_at_ms = TaskStatus.FAILED, body.error, body.at_ms
    t.error_type, t.outcome = body.error_type, t.outcome or AttemptEnd.REPORTED
    _child_finished(state, body.node, body.index)
    tries = state.tries(body.attempt)
    if body.retryable and tries < state.work(body.node, body.index).retry.max_attempts:
        return  # a TimerScheduled follows
    node = _node(state, body.node)
    node.failure = error_object(body.node, body.index, tries, body.error_type, body.error)
    if item and state.spec.node(body.node).continue_on_error:
        assert node.results is not None and body.index is not None
        node.results[body.index] = {"error": node.failure}
        node.done += 1
        node.failed += 1
    schedules.run_ended(state, body.node, body.index)  # a schedule's run is never retried


def _undispatched_item(state: WorkflowState, body: ev.TaskFailed) -> None:
    """A map item whose input could not be resolved fails before any dispatch: it gets
    its task (and its slot) as if it had been dispatched."""
    assert body.index is not None
    node = _node(state, body.node)
    if node.total is None or not 0 <= body.index < node.total:
        raise IllegalTransition(
            f"no item {task_key(body.node, body.index)} in workflow {state.workflow_id}")
    node.next_index = max(node.next_index, body.index + 1)
    node.running += 1  # as if dispatched; _child_finished gives the slot back
    state.tasks[task_key(body.node, body.index)] = TaskState(
        node=body.node, index=body.index, attempt=body.attempt,
        status=TaskStatus.DISPATCHED, dispatched_at_ms=body.at_ms)


def _cancelled(state: WorkflowState, body: ev.TaskCancelled) -> None:
    t = _task(state, body.node, body.index)
    if t.status is TaskStatus.RETRY_WAIT:
        state.timers.pop(retry_timer_id(task_key(body.node, body.index), t.attempt + 1), None)
    if not t.status.terminal and _fans_out(state, body.node):
        state.nodes[body.node].running -= 1  # a retry wait kept its slot too
    t.status, t.outcome, t.finished_at_ms = TaskStatus.CANCELLED, AttemptEnd.CANCELLED, body.at_ms
    schedules.run_ended(state, body.node, body.index)


def _discarded(state: WorkflowState, body: ev.ReportDiscarded) -> None:
    """Recorded for the audit trail; it changes nothing."""


def _child_finished(state: WorkflowState, node_id: str, index: int | None) -> None:
    """An item of a node that fans out (``over``) ended: its slot is free."""
    if index is not None and _fans_out(state, node_id):
        state.nodes[node_id].running -= 1


def _fans_out(state: WorkflowState, node_id: str) -> bool:
    """Whether the node keeps one result per item (a map, or a wait or child with
    ``over``); a loop's tasks have indexes too, but one result."""
    try:
        return state.spec.node(node_id).fans_out
    except KeyError:
        raise IllegalTransition(f"no node {node_id} in workflow {state.workflow_id}") from None


# -- timers --------------------------------------------------------------------------------

def _timer_scheduled(state: WorkflowState, body: ev.TimerScheduled) -> None:
    state.timers[body.timer_id] = TimerState(body.fire_at_ms, body.node, body.index,
                                             body.attempt)
    _task(state, body.node, body.index).status = TaskStatus.RETRY_WAIT
    if _fans_out(state, body.node):
        _node(state, body.node).running += 1  # the retry keeps its map slot


def _timer_fired(state: WorkflowState, body: ev.TimerFired) -> None:
    timer = state.timers.pop(body.timer_id, None)
    if timer is not None:
        waits.node_timer_fired(state, body.timer_id, timer)  # a wait's timeout, a sleep's end
        return
    parsed = parse_task_timer_id(body.timer_id)
    if parsed is None:
        raise IllegalTransition(f"no timer {body.timer_id} in workflow {state.workflow_id}")
    kind, key, _ = parsed
    t = state.tasks.get(key)
    if t is None:
        raise IllegalTransition(f"no task {key} in workflow {state.workflow_id}")
    t.outcome = AttemptEnd.TIMED_OUT if kind == DEADLINE_TIMER else AttemptEnd.LOST


# -- child workflows and loops -----------------------------------------------------------

def _parent_linked(state: WorkflowState, body: ev.ParentLinked) -> None:
    state.parent = {"workflow_id": body.parent_id, "node": body.node, "index": body.index,
                    "attempt": body.attempt}


def _loop_step_decided(state: WorkflowState, body: ev.LoopStepDecided) -> None:
    """A loop's step was decided: count it and its spending, keep the decision (the
    tool to run, or the output it finished with)."""
    node = _node(state, body.node)
    if body.step != node.steps:
        raise IllegalTransition(f"loop {body.node}: expected step {node.steps}, "
                                f"got {body.step}")
    node.steps += 1
    node.spent += body.spend
    node.decision = ({"step": body.step, "finish": body.output} if body.finish
                     else {"step": body.step, "tool": body.tool, "input": body.input})


# -- nodes and the workflow ----------------------------------------------------------------

def _map_expanded(state: WorkflowState, body: ev.MapExpanded) -> None:
    node = _node(state, body.node)
    node.status, node.total, node.results = NodeStatus.RUNNING, body.count, [None] * body.count


def _node_finished(state: WorkflowState, body: ev.NodeFinished) -> None:
    node = _node(state, body.node)
    if node.status.terminal:
        raise IllegalTransition(f"node {body.node} is already {node.status.value}")
    node.status = NodeStatus(body.status)
    node.error = body.error
    state.open_nodes -= 1
    if node.status is NodeStatus.FAILED and node.failure is None:
        # It failed before any attempt (a reference, a bad list).
        node.failure = error_object(body.node, None, 0, "", body.error)
    set_finished_output(state, body.node)
    waits.node_finished(state, body)


def _workflow_restarted(state: WorkflowState, body: ev.WorkflowRestarted) -> None:
    """A new generation: the nodes start over (pending), the previous generation's
    tasks, outputs and timers go, and attempts are numbered from ``attempt_floor + 1``.
    Every attempt must have ended first (the machine cancels them)."""
    live = [k for k, t in state.tasks.items() if not t.status.terminal]
    highest = max((t.attempt for t in state.tasks.values()), default=0)
    if body.generation != state.generation + 1 or live or body.attempt_floor < highest:
        raise IllegalTransition(
            f"restart to generation {body.generation} (floor {body.attempt_floor}) in "
            f"generation {state.generation} with attempts up to {highest}"
            + (f" and {live[0]} unfinished" if live else ""))
    state.generation, state.attempt_floor = body.generation, body.attempt_floor
    state.nodes = {n.id: NodeState() for n in state.spec.nodes}
    state.open_nodes = len(state.nodes)
    state.tasks.clear()
    state.outputs.clear()
    state.timers.clear()


def _workflow_succeeded(state: WorkflowState, body: ev.WorkflowSucceeded) -> None:
    _terminal(state, WorkflowStatus.SUCCEEDED)
    state.output = body.output


def _workflow_failed(state: WorkflowState, body: ev.WorkflowFailed) -> None:
    _terminal(state, WorkflowStatus.FAILED)
    state.error = body.error


def _workflow_cancelled(state: WorkflowState, body: ev.WorkflowCancelled) -> None:
    _terminal(state, WorkflowStatus.CANCELLED)
    state.error = body.reason


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


EVENT_HANDLERS: dict[type[Any], Callable[[WorkflowState, Any], None]] = {
    ev.TaskDispatched: _dispatched,
    ev.TaskStarted: _started,
    ev.TaskHeartbeated: _heartbeated,
    ev.TaskProgressed: _progressed,
    ev.TaskCheckpointed: _checkpointed,
    ev.TaskOutputStreamed: _streamed,
    ev.TaskSucceeded: _succeeded,
    ev.TaskFailed: _failed,
    ev.TaskCancelled: _cancelled,
    ev.ReportDiscarded: _discarded,
    ev.TimerScheduled: _timer_scheduled,
    ev.TimerFired: _timer_fired,
    ev.MapExpanded: _map_expanded,
    ev.WaitStarted: waits.wait_started,
    ev.SignalSent: waits.signal_sent,
    ev.SignalConsumed: waits.signal_consumed,
    ev.SignalDiscarded: waits.signal_discarded,
    ev.SleepStarted: waits.sleep_started,
    ev.ConditionEvaluated: waits.condition_evaluated,
    ev.ParentLinked: _parent_linked,
    ev.LoopStepDecided: _loop_step_decided,
    ev.ScheduleArmed: schedules.schedule_armed,
    ev.ScheduleFired: schedules.schedule_fired,
    ev.SchedulePaused: schedules.schedule_paused,
    ev.ScheduleResumed: schedules.schedule_resumed,
    ev.NodeFinished: _node_finished,
    ev.WorkflowRestarted: _workflow_restarted,
    ev.WorkflowSucceeded: _workflow_succeeded,
    ev.WorkflowFailed: _workflow_failed,
    ev.WorkflowCancelled: _workflow_cancelled,
}
"""Event type -> how it changes a running workflow (``WorkflowAccepted`` only starts one)."""
