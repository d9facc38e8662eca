"""How the events of a task attempt change a workflow's state: dispatch, reports,
outcome, cancellation and the timers (retry, deadline, lease, a node's own).

A node kind may change what its task's events do (``KindEvolution``, from its unit in
``headwater/core/kinds/``): a loop's tool joins its transcript, a schedule's runs are
forgotten once they end, a wait's timeout fails the wait. ``evolve`` folds these
handlers (``ATTEMPT_HANDLERS``) in with the workflow's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from headwater.core import events as ev
from headwater.core.deadline import RUN_DEADLINE_TIMER
from headwater.core.ids import DEADLINE_TIMER, parse_task_timer_id, retry_timer_id, task_key
from headwater.core.spec import NodeKind
from headwater.core.state import (
    IllegalTransition,
    TaskState,
    TimerState,
    WorkflowState,
    error_object,
    node_state,
    task_state,
)
from headwater.core.status import AttemptEnd, NodeStatus, TaskStatus
from headwater.core.work import task_tries, task_work


@dataclass(frozen=True)
class KindEvolution:
    """Where a node kind's state differs from the default, each None for the default.

    Attributes:
        task_succeeded: replaces the default success of its task (the output is the
            node's, or the item's result): a loop's tool joins its transcript, a
            schedule's run is forgotten.
        attempt_ended: after an attempt of its task failed or was cancelled.
        timer_fired: after its own timer fired (and left ``state.timers``), with the
            timer's id and state: a wait's timeout fails the wait (item).
        node_finished: after its node finished (a wait or sleep drops its timers).
        task_dispatched: after an attempt of its task was dispatched (a code node's
            activation fixes the results it is given).
        signal_consumed: after one of its tasks took a signal (a code node's signal
            wait), instead of the wait's default.
    """

    task_succeeded: Callable[[WorkflowState, ev.TaskSucceeded], None] | None = None
    task_dispatched: Callable[[WorkflowState, ev.TaskDispatched], None] | None = None
    attempt_ended: Callable[[WorkflowState, str, int | None], None] | None = None
    timer_fired: Callable[[WorkflowState, str, TimerState], None] | None = None
    node_finished: Callable[[WorkflowState, ev.NodeFinished], None] | None = None
    signal_consumed: Callable[[WorkflowState, ev.SignalConsumed], None] | None = None


KIND_EVOLUTIONS: dict[NodeKind, KindEvolution] = {}
"""Node kind -> where its state differs from the default (filled by ``install_kind``)."""


def _dispatched(state: WorkflowState, body: ev.TaskDispatched) -> None:
    key = task_key(body.node, body.index)
    held = state.tasks.get(key)
    was_held = held is not None and held.status is TaskStatus.HELD and (
        held.attempt == body.attempt)
    if not was_held:
        takes_slot(state, body.node, body.index, body.attempt)  # a held one took it
    state.tasks[key] = TaskState(
        node=body.node, index=body.index, attempt=body.attempt,
        status=TaskStatus.DISPATCHED, dispatched_at_ms=body.at_ms,
        deadline_ms=body.deadline_ms,
        heartbeat_ms=None if body.heartbeat_timeout_s is None
        else round(body.heartbeat_timeout_s * 1000),
        checkpoint=body.checkpoint,
        limiters=held.limiters if was_held and held is not None else None,
        cache=held.cache if was_held and held is not None else "",
        recalled=held.recalled if held is not None else 0,
    )
    evolution = KIND_EVOLUTIONS.get(state.spec.node(body.node).kind)
    if evolution is not None and evolution.task_dispatched is not None:
        evolution.task_dispatched(state, body)


def takes_slot(state: WorkflowState, node_id: str, index: int | None, attempt: int) -> None:
    """An attempt is dispatched, or held for a permit: the generation's first runs its
    node and, for an item of a node that fans out, takes a slot (a retry reuses the slot
    its TimerScheduled kept)."""
    node = node_state(state, node_id)
    if attempt == state.first_attempt:
        node.status = NodeStatus.RUNNING
        # Tasks 0..next_index-1 exist (a task node: 1), so a snapshot can list them.
        node.next_index = max(node.next_index, (index or 0) + 1)
        if _fans_out(state, node_id):
            node.running += 1


def _held(state: WorkflowState, body: ev.TaskHeld) -> None:
    """An attempt waits for a permit of ``body.limiter`` before its dispatch: it exists
    (``TaskStatus.HELD``, no deadline, no lease) and keeps its item's slot; the
    checkpoint of the task's last attempt stays for its dispatch. A later limit of the
    same attempt only changes what it waits for."""
    key = task_key(body.node, body.index)
    previous = state.tasks.get(key)
    if (previous is not None and previous.status is TaskStatus.HELD
            and previous.attempt == body.attempt):
        previous.waiting_for = body.limiter
        previous.limiters = [*(previous.limiters or []), body.limiter]
        return
    takes_slot(state, body.node, body.index, body.attempt)
    state.tasks[key] = TaskState(
        node=body.node, index=body.index, attempt=body.attempt, status=TaskStatus.HELD,
        dispatched_at_ms=body.at_ms, waiting_for=body.limiter, limiters=[body.limiter],
        checkpoint=previous.checkpoint if previous is not None else None,
        recalled=previous.recalled if previous is not None else 0)


def _looked_up(state: WorkflowState, body: ev.TaskLookedUp) -> None:
    """An attempt waits for its cache's answer before its limits and its dispatch: it
    exists (``TaskStatus.HELD``, waiting for the cache's id) and keeps its item's slot,
    as a held attempt does (``_held``)."""
    key = task_key(body.node, body.index)
    previous = state.tasks.get(key)
    takes_slot(state, body.node, body.index, body.attempt)
    state.tasks[key] = TaskState(
        node=body.node, index=body.index, attempt=body.attempt, status=TaskStatus.HELD,
        dispatched_at_ms=body.at_ms, waiting_for=body.cache, cache=body.cache,
        checkpoint=previous.checkpoint if previous is not None else None,
        recalled=previous.recalled if previous is not None else 0)


def _answered(state: WorkflowState, body: ev.CacheAnswered) -> None:
    """A miss: the attempt computes its key (it goes on to its limits and dispatch)."""
    task_state(state, body.node, body.index).waiting_for = ""


def _cached(state: WorkflowState, body: ev.TaskCached) -> None:
    """A hit: the attempt succeeded with the cache's output, as a worker's success
    would have it (its node's kind included); it releases nothing."""
    t = task_state(state, body.node, body.index)
    t.waiting_for, t.cache = "", ""
    _succeeded(state, ev.TaskSucceeded(body.workflow_id, body.node, body.index,
                                       body.attempt, body.at_ms, body.output))


def _cache_returned(state: WorkflowState, body: ev.CacheReturned) -> None:
    """The ended attempt released its cache."""
    task_state(state, body.node, body.index).cache = ""


def _granted(state: WorkflowState, body: ev.PermitGranted) -> None:
    """The held attempt got the permit it waited for."""
    task_state(state, body.node, body.index).waiting_for = ""


def _returned(state: WorkflowState, body: ev.PermitsReturned) -> None:
    """The ended attempt gave its limiters back: it holds and waits for nothing."""
    t = task_state(state, body.node, body.index)
    t.limiters, t.waiting_for = None, ""


def _started(state: WorkflowState, body: ev.TaskStarted) -> None:
    t = task_state(state, body.node, body.index)
    t.status, t.started_at_ms, t.worker = TaskStatus.RUNNING, body.at_ms, body.worker
    t.last_seen_ms = body.at_ms


def _heartbeated(state: WorkflowState, body: ev.TaskHeartbeated) -> None:
    """A report from a running attempt renews its lease; so does every report below."""
    task_state(state, body.node, body.index).last_seen_ms = body.at_ms


def _progressed(state: WorkflowState, body: ev.TaskProgressed) -> None:
    t = task_state(state, body.node, body.index)
    t.last_seen_ms = body.at_ms
    t.progress, t.message = body.fraction, body.message


def _checkpointed(state: WorkflowState, body: ev.TaskCheckpointed) -> None:
    t = task_state(state, body.node, body.index)
    t.last_seen_ms = body.at_ms
    t.checkpoint = body.checkpoint


def _streamed(state: WorkflowState, body: ev.TaskOutputStreamed) -> None:
    t = task_state(state, body.node, body.index)
    t.last_seen_ms = body.at_ms
    t.chunks = body.chunk_seq + 1


def _succeeded(state: WorkflowState, body: ev.TaskSucceeded) -> None:
    t = task_state(state, body.node, body.index)
    t.status, t.finished_at_ms, t.progress = TaskStatus.SUCCEEDED, body.at_ms, 1.0
    t.outcome = AttemptEnd.REPORTED
    spec = state.spec.node(body.node)
    evolution = KIND_EVOLUTIONS.get(spec.kind)
    if evolution is not None and evolution.task_succeeded is not None:
        evolution.task_succeeded(state, body)  # a loop's tool, a schedule's run
        return
    if not spec.fans_out:
        state.outputs[body.node] = body.output
        return
    node = node_state(state, body.node)
    assert node.results is not None and body.index is not None
    node.results[body.index] = body.output
    node.done += 1
    _child_finished(state, body.node, body.index)


def _failed(state: WorkflowState, body: ev.TaskFailed) -> None:
    """An attempt failed. If it was the last (not retryable, or no attempts left) the
    node records the failure; a ``continue_on_error`` map keeps it as the item's result
    and goes on."""
    item = body.index is not None and _fans_out(state, body.node)  # a map-like item
    if task_key(body.node, body.index) not in state.tasks and item:
        _undispatched_item(state, body)
    t = task_state(state, body.node, body.index)
    t.status, t.error, t.finished_at_ms = TaskStatus.FAILED, body.error, body.at_ms
    t.error_type, t.outcome = body.error_type, t.outcome or AttemptEnd.REPORTED
    _child_finished(state, body.node, body.index)
    tries = task_tries(state, body.node, body.index, body.attempt)
    if body.retryable and tries < task_work(state, body.node, body.index).retry.max_attempts:
        return  # a TimerScheduled follows
    node = node_state(state, body.node)
    node.failure = error_object(body.node, body.index, tries, body.error_type, body.error)
    if item and state.spec.node(body.node).continue_on_error:
        assert node.results is not None and body.index is not None
        node.results[body.index] = {"error": node.failure}
        node.done += 1
        node.failed += 1
    _attempt_ended(state, body.node, body.index)  # a schedule's run is never retried


def _undispatched_item(state: WorkflowState, body: ev.TaskFailed) -> None:
    """A map item whose input could not be resolved fails before any dispatch: it gets
    its task (and its slot) as if it had been dispatched."""
    assert body.index is not None
    node = node_state(state, body.node)
    if node.total is None or not 0 <= body.index < node.total:
        raise IllegalTransition(
            f"no item {task_key(body.node, body.index)} in workflow {state.workflow_id}")
    node.next_index = max(node.next_index, body.index + 1)
    node.running += 1  # as if dispatched; _child_finished gives the slot back
    state.tasks[task_key(body.node, body.index)] = TaskState(
        node=body.node, index=body.index, attempt=body.attempt,
        status=TaskStatus.DISPATCHED, dispatched_at_ms=body.at_ms)


def _cancelled(state: WorkflowState, body: ev.TaskCancelled) -> None:
    t = task_state(state, body.node, body.index)
    if t.status is TaskStatus.RETRY_WAIT:
        state.timers.pop(retry_timer_id(task_key(body.node, body.index), t.attempt + 1), None)
    if not t.status.terminal and _fans_out(state, body.node):
        state.nodes[body.node].running -= 1  # a retry wait kept its slot too
    t.status, t.outcome, t.finished_at_ms = TaskStatus.CANCELLED, AttemptEnd.CANCELLED, body.at_ms
    _attempt_ended(state, body.node, body.index)


def _attempt_ended(state: WorkflowState, node_id: str, index: int | None) -> None:
    """An attempt failed or was cancelled: its node's kind may forget it (a schedule's
    run)."""
    evolution = KIND_EVOLUTIONS.get(state.spec.node(node_id).kind)
    if evolution is not None and evolution.attempt_ended is not None:
        evolution.attempt_ended(state, node_id, index)


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
    task_state(state, body.node, body.index).status = TaskStatus.RETRY_WAIT
    if _fans_out(state, body.node):
        node_state(state, body.node).running += 1  # the retry keeps its map slot


def _timer_fired(state: WorkflowState, body: ev.TimerFired) -> None:
    if body.timer_id == RUN_DEADLINE_TIMER:
        return  # the run's deadline: the run's end follows (``machine/deadline.py``)
    timer = state.timers.pop(body.timer_id, None)
    if timer is not None:
        evolution = KIND_EVOLUTIONS.get(state.spec.node(timer.node).kind)
        if evolution is not None and evolution.timer_fired is not None:
            evolution.timer_fired(state, body.timer_id, timer)  # a wait's timeout
        return
    parsed = parse_task_timer_id(body.timer_id)
    if parsed is None:
        raise IllegalTransition(f"no timer {body.timer_id} in workflow {state.workflow_id}")
    kind, key, _ = parsed
    t = state.tasks.get(key)
    if t is None:
        raise IllegalTransition(f"no task {key} in workflow {state.workflow_id}")
    t.outcome = AttemptEnd.TIMED_OUT if kind == DEADLINE_TIMER else AttemptEnd.LOST


ATTEMPT_HANDLERS: dict[type[Any], Callable[[WorkflowState, Any], None]] = {
    ev.TaskDispatched: _dispatched,
    ev.TaskHeld: _held,
    ev.PermitGranted: _granted,
    ev.PermitsReturned: _returned,
    ev.TaskLookedUp: _looked_up,
    ev.CacheAnswered: _answered,
    ev.TaskCached: _cached,
    ev.CacheReturned: _cache_returned,
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
}
"""Event type -> how it changes the task it names (``evolve.EVENT_HANDLERS`` holds them)."""
