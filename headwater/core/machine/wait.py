"""The ``wait`` node kind: wait for a named signal, up to the node's timeout.

It starts by recording ``WaitStarted`` (with ``over``: ``MapExpanded``, then one
``WaitStarted`` per item, all at once), which arms its timeout timer
(``wait:<task key>``) when it has one, and takes a signal kept for it if one came
before it started (``SignalConsumed``). A signal that comes while it waits is recorded
(``SignalSent``) and taken at once; one that comes before it starts is recorded and kept
(``WorkflowState.signals``); one that comes after its wait ended, or for a node that
will never wait (skipped, cancelled), is recorded as ``SignalDiscarded``; one whose
``signal_id`` was recorded already changes nothing. The signal's fields are the node's
output (an item's result). When the timeout fires first, the node (the item) fails with
``TimeoutError: no signal <name> within <t> s``, which routes as any failure
(``on_error``, ``continue_on_error``; an item of a ``continue_on_error`` wait keeps the
error as its result and the others go on). Exactly one outcome per wait: what comes
second is discarded (a signal) or changes nothing (a timer already dropped).
"""

from __future__ import annotations

from typing import Any

from headwater.core import events as ev
from headwater.core.evolve_waits import TIMEOUT_ERROR
from headwater.core.machine import ending, flow
from headwater.core.machine import map as map_kind
from headwater.core.machine.recorder import Recorder
from headwater.core.signals import (
    signal_fault,
    signal_key,
    timeout_message,
    wait_node,
    with_optional,
)
from headwater.core.spec import NodeSpec
from headwater.core.state import WorkflowState
from headwater.core.status import NodeStatus


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Wait: once, or (with ``over``) once per item of the list."""
    if not spec.fans_out:
        _begin(rec, spec, None)
        return
    count = map_kind.expand(rec, spec)
    if count is None:
        return
    for index in range(count):
        _begin(rec, spec, index)
    _progress(rec, spec)


def _begin(rec: Recorder, spec: NodeSpec, index: int | None) -> None:
    """Record that the node (item) waits, then take a signal kept for it, if any."""
    assert spec.wait is not None
    timeout_at = None if spec.timeout is None else rec.at_ms + round(spec.timeout * 1000)
    state = rec.record(ev.WaitStarted(rec.current.workflow_id, spec.id, index,
                                      spec.wait.signal, rec.at_ms, timeout_at))
    kept = state.signals.get(signal_key(spec.wait.signal, index))
    if kept:
        _consume(rec, spec, index, kept[0]["signal_id"], kept[0]["fields"])


def _consume(rec: Recorder, spec: NodeSpec, index: int | None, signal_id: str,
             fields: Any) -> None:
    """The node (item) takes a signal; a plain wait has succeeded with it."""
    assert spec.wait is not None
    rec.record(ev.SignalConsumed(rec.current.workflow_id, spec.id, index, spec.wait.signal,
                                 signal_id, rec.at_ms, with_optional(spec.wait.fields, fields)))
    if index is None:
        flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)


def _progress(rec: Recorder, spec: NodeSpec) -> None:
    """An item ended: the wait with ``over`` finishes when every item has (failed, with
    ``continue_on_error``, if any item timed out)."""
    node = rec.current.nodes[spec.id]
    if node.total is None or node.done < node.total or node.status.terminal:
        return
    if node.failed:
        flow.finish(rec, spec.id, NodeStatus.FAILED,
                    f"{node.failed} of {node.total} items of {spec.id} failed")
    else:
        flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)


def signal_sent(rec: Recorder, state: WorkflowState, signal: ev.SignalSent) -> None:
    """Apply a signal to a running workflow (see the module's rules).

    Args:
        rec: the step's recorder.
        state: the running workflow.
        signal: the signal; ``signals.signal_fault`` should have found nothing wrong
            with it (one that does is recorded as discarded, with the fault).
    """
    if signal.signal_id and signal.signal_id in state.signal_ids:
        return  # the same signal again: an at-least-once sender
    fault = signal_fault(state, signal)
    spec = None if fault else wait_node(state.spec, signal.name)
    if spec is None:
        _discard(rec, signal, fault or "no such wait")
        return
    node = state.nodes[spec.id]
    if node.status is NodeStatus.PENDING:
        rec.record(signal)  # kept until the wait starts
    elif node.status.terminal:
        _discard(rec, signal, f"wait {spec.id} is {node.status.value}")
    elif _waiting(state, spec, signal.index):
        rec.record(signal)
        _consume(rec, spec, signal.index, signal.signal_id, signal.fields)
        _progress(rec, spec)
    else:
        _discard(rec, signal, f"{signal_key(spec.id, signal.index)} has taken a signal "
                              "already")


def _waiting(state: WorkflowState, spec: NodeSpec, index: int | None) -> bool:
    """Whether the node (its item ``index``) of a running wait still waits."""
    node = state.nodes[spec.id]
    if index is None:
        return True
    return (node.results is not None and 0 <= index < len(node.results)
            and node.results[index] is None)


def _discard(rec: Recorder, signal: ev.SignalSent, reason: str) -> None:
    rec.record(ev.SignalDiscarded(signal.workflow_id, signal.name, signal.index,
                                  signal.signal_id, rec.at_ms, reason))


def timed_out(rec: Recorder, spec: NodeSpec, index: int | None) -> None:
    """The node's (item's) timeout fired while it waited (``TimerFired`` recorded): it
    failed; an item of a ``continue_on_error`` wait lets the others go on."""
    if rec.current.nodes[spec.id].status.terminal:
        return
    message = f"{TIMEOUT_ERROR}: {timeout_message(spec, index)}"
    if index is not None and spec.continue_on_error:
        _progress(rec, spec)
        return
    ending.node_failed(rec, spec.id, message)


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A wait has no tasks: no attempt of it can succeed."""


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A wait has no tasks: no attempt of it can fail."""
