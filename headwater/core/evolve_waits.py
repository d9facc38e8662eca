"""How the events of waits, signals, sleeps and conditions change a workflow's state:
the handlers ``evolve`` calls for them (``evolve.EVENT_HANDLERS``), and what a node
timer's firing and a node's end do to that state.

A waiting node (or item) holds a ``wait:<task key>`` timer in ``state.timers`` when it
has a timeout, a sleeping one a ``sleep:<node>`` timer (``TimerState`` with attempt 0;
the coordinator arms every timer of ``state.timers``). Signals taken before their wait
started are kept in ``state.signals`` by ``signals.signal_key``; every recorded
``signal_id`` is kept in ``state.signal_ids``. A wait with ``over`` keeps one result per
item, as a map does (``MapExpanded`` made the list): an item is waiting while its result
is None (a signal's fields are always an object).
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.ids import (
    SLEEP_TIMER,
    WAIT_TIMER,
    node_timer_id,
    parse_node_timer_id,
    task_key,
)
from headwater.core.signals import signal_key, timeout_message
from headwater.core.state import NodeState, TimerState, WorkflowState, error_object
from headwater.core.status import NodeStatus

TIMEOUT_ERROR = "TimeoutError"
"""The error type of a wait whose timeout passed."""


def _node(state: WorkflowState, node_id: str) -> NodeState:
    node = state.nodes.get(node_id)
    if node is None:
        from headwater.core.evolve import IllegalTransition
        raise IllegalTransition(f"no node {node_id} in workflow {state.workflow_id}")
    return node


def wait_started(state: WorkflowState, body: ev.WaitStarted) -> None:
    """A wait (item) waits: the node runs; its timeout timer is armed."""
    node = _node(state, body.node)
    node.status = NodeStatus.RUNNING
    if body.index is not None:
        node.running += 1
    if body.timeout_at_ms is not None:
        key = task_key(body.node, body.index)
        state.timers[node_timer_id(WAIT_TIMER, key)] = TimerState(
            body.timeout_at_ms, body.node, body.index, 0)


def signal_sent(state: WorkflowState, body: ev.SignalSent) -> None:
    """A signal was taken: kept (a ``SignalConsumed`` follows at once if its wait is
    waiting) and its id remembered."""
    state.signals.setdefault(signal_key(body.name, body.index), []).append(
        {"signal_id": body.signal_id, "fields": body.fields, "at_ms": body.at_ms})
    if body.signal_id:
        state.signal_ids.append(body.signal_id)


def signal_consumed(state: WorkflowState, body: ev.SignalConsumed) -> None:
    """A waiting node (item) took the oldest signal kept for it: its fields are the
    output (the item's result); its timeout timer goes."""
    key = signal_key(body.name, body.index)
    kept = state.signals.get(key)
    if kept:
        kept.pop(0)
        if not kept:
            del state.signals[key]
    state.timers.pop(node_timer_id(WAIT_TIMER, task_key(body.node, body.index)), None)
    if body.index is None:
        state.outputs[body.node] = body.fields
        return
    node = _node(state, body.node)
    if node.results is None or not 0 <= body.index < len(node.results):
        from headwater.core.evolve import IllegalTransition
        raise IllegalTransition(f"no item {task_key(body.node, body.index)} waits")
    node.results[body.index] = body.fields
    node.done += 1
    node.running -= 1


def signal_discarded(state: WorkflowState, body: ev.SignalDiscarded) -> None:
    """A signal that changed nothing: only its id is remembered."""
    if body.signal_id:
        state.signal_ids.append(body.signal_id)


def sleep_started(state: WorkflowState, body: ev.SleepStarted) -> None:
    """A sleep runs until its wake-up (its timer armed unless that has passed); its
    output is null (``state.set_finished_output``)."""
    _node(state, body.node).status = NodeStatus.RUNNING
    if body.wake_at_ms > body.at_ms:
        state.timers[node_timer_id(SLEEP_TIMER, body.node)] = TimerState(
            body.wake_at_ms, body.node, None, 0)


def condition_evaluated(state: WorkflowState, body: ev.ConditionEvaluated) -> None:
    """A false ``when``: the node is branch-skipped (its ``NodeFinished`` follows)."""
    if not body.value:
        _node(state, body.node).branch_skipped = True


def node_timer_fired(state: WorkflowState, timer_id: str, timer: TimerState) -> None:
    """A wait's timeout fired (the timer already removed): the node (item) failed with
    ``TimeoutError``; an item of a ``continue_on_error`` wait keeps the error as its
    result and the wait goes on. A sleep's wake-up changes nothing here."""
    parsed = parse_node_timer_id(timer_id)
    if parsed is None or parsed[0] != WAIT_TIMER:
        return
    node = _node(state, timer.node)
    spec = state.spec.node(timer.node)
    node.failure = error_object(timer.node, timer.index, 1, TIMEOUT_ERROR,
                                timeout_message(spec, timer.index))
    if timer.index is not None and node.results is not None:
        node.running -= 1
        if spec.continue_on_error:
            node.results[timer.index] = {"error": node.failure}
            node.done += 1
            node.failed += 1


def node_finished(state: WorkflowState, body: ev.NodeFinished) -> None:
    """After a node's end: a skip whose needs were all branch-skipped is one too, and a
    finished wait or sleep drops its remaining timers."""
    node = state.nodes[body.node]
    spec = state.spec.node(body.node)
    if node.status is NodeStatus.SKIPPED and spec.needs and all(
            state.nodes[n].branch_skipped for n in spec.needs):
        node.branch_skipped = True
    if spec.wait is None and spec.sleep is None:
        return
    for timer_id in [t for t, timer in state.timers.items() if timer.node == body.node
                     and parse_node_timer_id(t) is not None]:
        del state.timers[timer_id]
