"""The ``sleep`` kind's rules and its ``UNIT``: how its node starts and what its
attempts, timer and signals do, and how its events change the state (the kind is
described in ``headwater/core/kinds/sleep/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.attempts import KindEvolution
from headwater.core.evolve import drop_node_timers
from headwater.core.ids import SLEEP_TIMER, node_timer_id
from headwater.core.instants import RFC3339_HINT, parse_instant
from headwater.core.kinds.sleep.records import DESCRIBE, FOLLOW, SleepSpec
from headwater.core.machine import flow
from headwater.core.machine.recorder import Recorder
from headwater.core.refs import parse_ref
from headwater.core.registry import KindUnit
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.fields import seconds
from headwater.core.spec.kinds import KindParts, Work
from headwater.core.state import TimerState, WorkflowState, node_state
from headwater.core.status import NodeStatus
from headwater.errors import InputReferenceError


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Sleep until the node's wake-up (at once if that has passed)."""
    try:
        wake_at = wake_at_ms(rec, spec)
    except InputReferenceError as e:
        flow.node_failed(rec, spec.id, f"sleep {spec.id}: until: {e}")
        return
    rec.record(ev.SleepStarted(rec.current.workflow_id, spec.id, rec.at_ms, wake_at))
    if wake_at <= rec.at_ms:
        flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)


def wake_at_ms(rec: Recorder, spec: NodeSpec) -> int:
    """When the node wakes, ms since the epoch.

    Raises:
        InputReferenceError: ``until`` is a reference that cannot be resolved or does
            not give an RFC 3339 instant.
    """
    assert spec.sleep is not None
    if spec.sleep.duration is not None:
        return rec.at_ms + round(spec.sleep.duration * 1000)
    assert spec.sleep.until is not None
    text = rec.current.resolve_input(spec.sleep.until)
    at = parse_instant(text) if isinstance(text, str) else None
    if at is None:
        raise InputReferenceError(f"{spec.sleep.until} gave {repr(text)[:80]}, not {RFC3339_HINT}")
    return at


def woke(rec: Recorder, spec: NodeSpec, index: int | None = None) -> None:
    """The node's timer fired (``TimerFired`` recorded): it has slept."""
    if not rec.current.nodes[spec.id].status.terminal:
        flow.finish(rec, spec.id, NodeStatus.SUCCEEDED)


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A sleep has no tasks: no attempt of it can succeed."""


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A sleep has no tasks: no attempt of it can fail."""


def _sleep_started(state: WorkflowState, body: ev.SleepStarted) -> None:
    """A sleep runs until its wake-up (its timer armed unless that has passed); its
    output is null (``state.set_finished_output``)."""
    node_state(state, body.node).status = NodeStatus.RUNNING
    if body.wake_at_ms > body.at_ms:
        state.timers[node_timer_id(SLEEP_TIMER, body.node)] = TimerState(
            body.wake_at_ms, body.node, None, 0)


def _parse(raw: Mapping[str, Any], where: str, work: Work,
           validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    """A sleep's fields: exactly one of ``duration`` and ``until``."""
    return KindParts(sleep=_sleep(raw, where, faults))


def _sleep(raw: Mapping[str, Any], where: str, faults: list[str]) -> SleepSpec:
    duration = seconds(raw.get("duration"), None, f"{where}: duration", faults)
    until = raw.get("until")
    if (raw.get("duration") is None) == (until is None):
        faults.append(f"{where}: a sleep needs exactly one of 'duration' (seconds) and "
                      "'until' (an instant)")
    if until is None:
        return SleepSpec(duration=duration)
    ref = parse_ref(until) if isinstance(until, str) else None
    if isinstance(ref, str):
        faults.append(f"{where}: until: {until}: {ref}")
    elif ref is None and not (isinstance(until, str) and parse_instant(until) is not None):
        faults.append(f"{where}: until must be {RFC3339_HINT}, or a ${{...}} reference")
    return SleepSpec(duration=duration, until=until if isinstance(until, str) else None)


UNIT = KindUnit(NodeKind.SLEEP, frozenset({"duration", "until"}), start, attempt_succeeded,
                attempt_failed, parse=_parse, keeps_output=True, describe=DESCRIBE,
                follow=FOLLOW, timer_prefix=SLEEP_TIMER, timer_fired=woke,
                events={ev.SleepStarted: _sleep_started},
                evolution=KindEvolution(node_finished=drop_node_timers))
"""The ``sleep`` kind."""
