"""The ``wait`` kind's rules and its ``UNIT``: how its node starts and what its
attempts, timer and signals do, and how its events change the state (the kind is
described in ``headwater/core/kinds/wait/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.attempts import KIND_EVOLUTIONS, KindEvolution
from headwater.core.evolve import drop_node_timers
from headwater.core.ids import WAIT_TIMER, node_timer_id, parse_node_timer_id, task_key
from headwater.core.kinds.map import expand
from headwater.core.kinds.wait.records import (
    DESCRIBE,
    FOLLOW,
    SIGNAL_FIELD_TYPES,
    SignalField,
    WaitSpec,
)
from headwater.core.machine import flow
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.signals import (
    id_fault,
    signal_fault,
    signal_key,
    timeout_message,
    wait_node,
    with_optional,
)
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.fields import NODE_ID
from headwater.core.spec.kinds import KindParts, Work
from headwater.core.state import (
    IllegalTransition,
    TimerState,
    WorkflowState,
    error_object,
    node_state,
)
from headwater.core.status import NodeStatus

TIMEOUT_ERROR = "TimeoutError"
"""The error type of a wait whose timeout passed."""


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Wait: once, or (with ``over``) once per item of the list."""
    if not spec.fans_out:
        _begin(rec, spec, None)
        return
    count = expand(rec, spec)
    if count is None:
        return
    _discard_unwaited(rec, spec, count)
    for index in range(count):
        _begin(rec, spec, index)
    _progress(rec, spec)


def _discard_unwaited(rec: Recorder, spec: NodeSpec, count: int) -> None:
    """Discard the signals kept for the wait with ``over`` ``spec`` whose index is past
    its ``count`` items, now that it starts (before, its items were not known; a signal
    without an index, or with one for a plain wait, is refused when it comes:
    ``signals.signal_fault``). A signal kept without an id stays (its discard could not
    name it)."""
    assert spec.wait is not None
    name = spec.wait.signal
    for key, kept in list(rec.current.signals.items()):
        mine, index = _kept_index(key, name)
        if not mine or index is None or 0 <= index < count:
            continue
        why = f"wait {spec.id} has {count} items: {task_key(spec.id, index)} is not one"
        for entry in [e for e in kept if e["signal_id"]]:
            rec.record(ev.SignalDiscarded(rec.current.workflow_id, name, index,
                                          entry["signal_id"], rec.at_ms, why))


def _kept_index(key: str, name: str) -> tuple[bool, int | None]:
    """Whether the signals kept under ``key`` are signal ``name``'s, and their index
    (``signals.signal_key``: ``name`` or ``name[index]``; None: no index)."""
    if key == name:
        return True, None
    if key.startswith(name + "[") and key.endswith("]"):
        digits = key[len(name) + 1:-1]
        if digits.lstrip("-").isdigit():
            return True, int(digits)
    return False, None


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
            with it (one that does is recorded as discarded, with the fault; a name or
            id it could not store is left out).
    """
    if signal.signal_id and signal.signal_id in state.signal_ids:
        return  # the same signal again: an at-least-once sender
    fault = signal_fault(state, signal)
    spec = None if fault else wait_node(state.spec, signal.name)
    if spec is None:
        discard(rec, signal, fault or "no such wait")
        return
    reason = _unwanted(state, spec, signal.index)
    if reason is not None:
        discard(rec, signal, reason)
        return
    rec.record(signal)  # kept until the wait starts, or taken now
    if state.nodes[spec.id].status is NodeStatus.RUNNING:
        _consume(rec, spec, signal.index, signal.signal_id, signal.fields)
        _progress(rec, spec)


_ENDED = {
    NodeStatus.SUCCEEDED: "has already succeeded",
    NodeStatus.FAILED: "has already failed",
    NodeStatus.CANCELLED: "was cancelled",
    NodeStatus.SKIPPED: "was skipped",
    NodeStatus.UPSTREAM_FAILED: "will not run: a node it needs failed",
}
"""How a discard's reason says that a wait has ended: ``wait w has already failed``."""


def _unwanted(state: WorkflowState, spec: NodeSpec, index: int | None) -> str | None:
    """Why the wait ``spec`` (its item ``index``) takes no further signal, or None when
    it waits for one now or may keep one until it starts."""
    node = state.nodes[spec.id]
    where = f"wait {task_key(spec.id, index)}"
    if node.status.terminal:
        return f"wait {spec.id} {_ENDED.get(node.status, 'has ended')}"
    if node.status is NodeStatus.PENDING:
        assert spec.wait is not None
        kept = state.signals.get(signal_key(spec.wait.signal, index))
        if not kept:
            return None
        sid = kept[0]["signal_id"]
        return f"{f'signal {sid}' if sid else 'a signal'} is already kept for {where}"
    return None if index is None else _item_taken(state, spec, index)


def _item_taken(state: WorkflowState, spec: NodeSpec, index: int) -> str | None:
    """Why item ``index`` of a running wait with ``over`` takes no further signal (it
    took one, or timed out), or None while it waits."""
    node = state.nodes[spec.id]
    where = f"wait {task_key(spec.id, index)}"
    if node.results is None or not 0 <= index < len(node.results):
        return f"{where} is not one of its items"  # signal_fault refuses it first
    result = node.results[index]
    if result is None:
        return None
    timed_out = spec.timeout is not None and result == {"error": error_object(
        spec.id, index, 1, TIMEOUT_ERROR, timeout_message(spec, index))}
    return f"{where} has already {'timed out' if timed_out else 'taken a signal'}"


def discard(rec: Recorder, signal: ev.SignalSent, reason: str) -> None:
    """Record that ``signal`` changed nothing; a name or id that cannot be stored as it
    is (``signals.id_fault``: the reason says why) is recorded as ``""``."""
    name = signal.name if id_fault("", signal.name) is None else ""
    signal_id = signal.signal_id if id_fault("", signal.signal_id) is None else ""
    rec.record(ev.SignalDiscarded(signal.workflow_id, name, signal.index, signal_id,
                                  rec.at_ms, reason))


def timed_out(rec: Recorder, spec: NodeSpec, index: int | None) -> None:
    """The node's (item's) timeout fired while it waited (``TimerFired`` recorded): it
    failed; an item of a ``continue_on_error`` wait lets the others go on."""
    if rec.current.nodes[spec.id].status.terminal:
        return
    message = f"{TIMEOUT_ERROR}: {timeout_message(spec, index)}"
    if index is not None and spec.continue_on_error:
        _progress(rec, spec)
        return
    flow.node_failed(rec, spec.id, message)


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A wait has no tasks: no attempt of it can succeed."""


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A wait has no tasks: no attempt of it can fail."""


# -- how its events change the state ------------------------------------------------------

def _wait_started(state: WorkflowState, body: ev.WaitStarted) -> None:
    """A wait (item) waits: the node runs; its timeout timer is armed."""
    node = node_state(state, body.node)
    node.status = NodeStatus.RUNNING
    if body.index is not None:
        node.running += 1
    if body.timeout_at_ms is not None:
        key = task_key(body.node, body.index)
        state.timers[node_timer_id(WAIT_TIMER, key)] = TimerState(
            body.timeout_at_ms, body.node, body.index, 0)


def _signal_recorded(state: WorkflowState, body: ev.SignalSent) -> None:
    """A signal was taken: kept (a ``SignalConsumed`` follows at once if its wait is
    waiting) and its id remembered."""
    state.signals.setdefault(signal_key(body.name, body.index), []).append(
        {"signal_id": body.signal_id, "fields": body.fields, "at_ms": body.at_ms})
    if body.signal_id:
        state.signal_ids.append(body.signal_id)


def _signal_consumed(state: WorkflowState, body: ev.SignalConsumed) -> None:
    """A waiting node (item) took the oldest signal kept for it: its fields are the
    output (the item's result); its timeout timer goes. A code workflow's signals are
    kept under their name alone (a wait's index is its step's task, which no sender
    names), and taken from there."""
    code = state.spec.node(body.node).code is not None
    key = signal_key(body.name, None if code else body.index)
    kept = state.signals.get(key)
    if kept:
        kept.pop(0)
        if not kept:
            del state.signals[key]
    state.timers.pop(node_timer_id(WAIT_TIMER, task_key(body.node, body.index)), None)
    evolution = KIND_EVOLUTIONS.get(state.spec.node(body.node).kind)
    if evolution is not None and evolution.signal_consumed is not None:
        evolution.signal_consumed(state, body)  # a code workflow's signal wait
        return
    if body.index is None:
        state.outputs[body.node] = body.fields
        return
    node = node_state(state, body.node)
    if node.results is None or not 0 <= body.index < len(node.results):
        raise IllegalTransition(f"no item {task_key(body.node, body.index)} waits")
    node.results[body.index] = body.fields
    node.done += 1
    node.running -= 1


def _signal_discarded(state: WorkflowState, body: ev.SignalDiscarded) -> None:
    """A signal that changed nothing: only its id is remembered. One that was kept (its
    id among those kept under its name and index: its wait, starting, has no item for
    it) leaves them; its id is remembered already."""
    key = signal_key(body.name, body.index)
    kept = state.signals.get(key, [])
    mine = [e for e in kept if body.signal_id and e["signal_id"] == body.signal_id]
    if mine:
        kept.remove(mine[0])
        if not kept:
            del state.signals[key]
        return
    if body.signal_id:
        state.signal_ids.append(body.signal_id)


def _timeout_recorded(state: WorkflowState, timer_id: str, timer: TimerState) -> None:
    """A wait's timeout fired (the timer already removed): the node (item) failed with
    ``TimeoutError``; an item of a ``continue_on_error`` wait keeps the error as its
    result and the wait goes on. A sleep's wake-up changes nothing here."""
    parsed = parse_node_timer_id(timer_id)
    if parsed is None or parsed[0] != WAIT_TIMER:
        return
    node = node_state(state, timer.node)
    spec = state.spec.node(timer.node)
    node.failure = error_object(timer.node, timer.index, 1, TIMEOUT_ERROR,
                                timeout_message(spec, timer.index))
    if timer.index is not None and node.results is not None:
        node.running -= 1
        if spec.continue_on_error:
            node.results[timer.index] = {"error": node.failure}
            node.done += 1
            node.failed += 1


# -- its spec fields ----------------------------------------------------------------------

def _parse(raw: Mapping[str, Any], where: str, work: Work,
           validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    """A wait's fields: the signal it waits for and the fields that signal declares."""
    return KindParts(wait=_wait(raw, where, faults))


def _wait(raw: Mapping[str, Any], where: str, faults: list[str]) -> WaitSpec:
    signal = raw.get("signal")
    if not isinstance(signal, str) or not NODE_ID.fullmatch(signal):
        faults.append(f"{where}: signal: required, a name matching {NODE_ID.pattern}")
        signal = ""
    declared = raw.get("fields", {})
    if declared is None:
        declared = {}
    if not isinstance(declared, Mapping):
        faults.append(f"{where}: fields must be a mapping of field name to type")
        declared = {}
    fields = [f for name, spec in declared.items()
              if (f := _signal_field(name, spec, f"{where}: fields", faults)) is not None]
    return WaitSpec(signal=signal, fields=tuple(fields))


def _signal_field(name: Any, spec: Any, where: str, faults: list[str]) -> SignalField | None:
    """One declared field: ``name: type`` (required) or ``name: {type, required?}``."""
    if not isinstance(name, str) or not name:
        faults.append(f"{where}: field names must be non-empty strings")
        return None
    required: Any = True
    if isinstance(spec, Mapping):
        for key in sorted(set(spec) - {"type", "required"}, key=str):
            faults.append(f"{where}: {name}: unknown field {key!r}")
        required = spec.get("required", True)
        spec = spec.get("type", "any")
    if spec not in SIGNAL_FIELD_TYPES:
        faults.append(f"{where}: {name}: type must be one of {', '.join(SIGNAL_FIELD_TYPES)}")
        return None
    if not isinstance(required, bool):
        faults.append(f"{where}: {name}: required must be true or false")
        return None
    return SignalField(name=name, type=str(spec), required=required)


UNIT = KindUnit(NodeKind.WAIT, frozenset({"signal", "fields", "timeout", "over"}), start,
                attempt_succeeded, attempt_failed, parse=_parse, keeps_output=True,
                describe=DESCRIBE, follow=FOLLOW, timer_prefix=WAIT_TIMER, timer_fired=timed_out,
                signal_sent=signal_sent,
                events={ev.WaitStarted: _wait_started, ev.SignalSent: _signal_recorded,
                        ev.SignalConsumed: _signal_consumed,
                        ev.SignalDiscarded: _signal_discarded},
                evolution=KindEvolution(timer_fired=_timeout_recorded,
                                        node_finished=drop_node_timers))
"""The ``wait`` kind: it takes every signal that no other kind claims."""
