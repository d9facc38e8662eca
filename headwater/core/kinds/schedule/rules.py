"""The ``schedule`` kind's rules and its ``UNIT``: how its node starts and what its
attempts, timer and signals do, and how its events change the state (the kind is
described in ``headwater/core/kinds/schedule/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.attempts import KindEvolution
from headwater.core.ids import child_id, task_key
from headwater.core.kinds.schedule.cron import (
    PAUSE_SIGNAL,
    SCHEDULE_KEYS,
    SCHEDULE_TIMER,
    ScheduleSpec,
    due_fire_times,
    instant_text,
    next_fire_ms,
    parse_schedule,
    schedule_timer_id,
)
from headwater.core.kinds.schedule.records import DESCRIBE, FOLLOW
from headwater.core.kinds.wait.rules import signal_sent as wait_signal_sent
from headwater.core.machine import dispatch
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.signals import signal_fault
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.kinds import KindParts, Work
from headwater.core.state import IllegalTransition, NodeState, TimerState, WorkflowState
from headwater.core.status import NodeStatus

STARTED = "started"
SKIPPED_OVERLAP = "skipped_overlap"
SKIPPED_MISSED = "skipped_missed"
SKIPPED_PAUSED = "skipped_paused"
OUTCOMES = (STARTED, SKIPPED_OVERLAP, SKIPPED_MISSED, SKIPPED_PAUSED)
"""The outcomes of a fire time (``ScheduleFired.outcome``)."""


def start(rec: Recorder, spec: NodeSpec) -> None:
    """Arm the first fire time after ``start_at`` (or after now)."""
    assert spec.schedule is not None
    after = spec.schedule.start_at_ms
    _arm(rec, spec, rec.at_ms if after is None else after)


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A run succeeded: the schedule goes on as before."""


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A run failed or was cancelled: the schedule goes on as before (never failing)."""


def fired(rec: Recorder, spec: NodeSpec, index: int | None = None) -> None:
    """The node's timer fired (``TimerFired`` recorded, at ``rec.at_ms``): record each
    due fire time's outcome, start the runs, arm the next fire time."""
    assert spec.schedule is not None
    node = rec.current.nodes[spec.id]
    if node.next_fire_ms is None:
        return
    due = due_fire_times(spec.schedule, node.next_fire_ms, rec.at_ms)
    paused = node.paused
    for fire_ms, runs in plan(spec.schedule, due, rec.at_ms):
        if paused:
            _skipped(rec, spec, fire_ms, SKIPPED_PAUSED)
        elif not runs:
            _skipped(rec, spec, fire_ms, SKIPPED_MISSED)
        else:
            _fire(rec, spec, fire_ms)
    _arm(rec, spec, max([rec.at_ms, *due]))


def plan(spec: ScheduleSpec, due: list[int], now_ms: int) -> list[tuple[int, bool]]:
    """``(fire time, runs)`` for each due fire time (oldest first), by the catch-up
    policy: on time (at most ``misfire_grace`` before ``now_ms``) runs; of the missed,
    ``none`` runs none, ``latest`` the latest if none is on time, ``all`` the latest
    ``catchup_max``."""
    grace_ms = round(spec.misfire_grace * 1000)
    missed = [f for f in due if now_ms - f > grace_ms]
    on_time = due[len(missed):]
    caught: list[int] = []
    if spec.catchup == "all":
        caught = missed[-spec.catchup_max:]
    elif spec.catchup == "latest" and not on_time:
        caught = missed[-1:]
    runs = set(caught) | set(on_time)
    return [(f, f in runs) for f in due]


def _fire(rec: Recorder, spec: NodeSpec, fire_ms: int) -> None:
    """Start the run of ``fire_ms``, as the overlap policy says."""
    assert spec.schedule is not None
    state = rec.current
    running = [t for t in state.tasks.values() if t.node == spec.id and t.status.live]
    if running and spec.schedule.overlap == "skip":
        _skipped(rec, spec, fire_ms, SKIPPED_OVERLAP)
        return
    if spec.schedule.overlap == "cancel_previous":
        why = (f"schedule {spec.id}: the run of {instant_text(fire_ms)} replaces it "
               "(overlap: cancel_previous)")
        for t in running:
            rec.record(ev.TaskCancelled(state.workflow_id, spec.id, t.index, t.attempt,
                                        rec.at_ms, why))
    k = rec.current.nodes[spec.id].next_index
    rec.record(ev.ScheduleFired(state.workflow_id, spec.id, rec.at_ms, fire_ms, STARTED,
                                child_id(state.workflow_id, spec.id, k, 1)))
    dispatch.dispatch(rec, spec, k, 1)


def _skipped(rec: Recorder, spec: NodeSpec, fire_ms: int, outcome: str) -> None:
    rec.record(ev.ScheduleFired(rec.current.workflow_id, spec.id, rec.at_ms, fire_ms, outcome))


def _arm(rec: Recorder, spec: NodeSpec, after_ms: int) -> None:
    """Arm the first fire time after ``after_ms`` (none if the expression has none)."""
    assert spec.schedule is not None
    fire_ms = next_fire_ms(spec.schedule, after_ms)
    if fire_ms is not None:
        rec.record(ev.ScheduleArmed(rec.current.workflow_id, spec.id, rec.at_ms, fire_ms))


def schedule_node(state: WorkflowState) -> NodeSpec | None:
    """The workflow's schedule node, or None (for an invalid spec too)."""
    if state.spec_error:
        return None
    return next((n for n in state.spec.nodes if n.schedule is not None), None)


def signal_sent(rec: Recorder, state: WorkflowState, signal: ev.SignalSent) -> None:
    """A signal for a schedule workflow: ``pause`` or ``resume``; any other (or one with
    fields, or an index) is discarded with its fault, as a wait's would be."""
    spec = schedule_node(state)
    if spec is None or signal_fault(state, signal) is not None:
        wait_signal_sent(rec, state, signal)
        return
    if signal.signal_id and signal.signal_id in state.signal_ids:
        return  # the same signal again
    node = state.nodes[spec.id]
    if signal.name == PAUSE_SIGNAL:
        if not node.paused:
            rec.record(ev.SchedulePaused(state.workflow_id, spec.id, rec.at_ms,
                                         signal.signal_id))
    elif node.paused:
        rec.record(ev.ScheduleResumed(state.workflow_id, spec.id, rec.at_ms, signal.signal_id))
        _arm(rec, spec, rec.at_ms)


def cancels_run(state: WorkflowState | None, body: ev.TaskCancelled) -> bool:
    """Whether a cancelled attempt cancels its child workflow: yes, except the runs of a
    schedule whose workflow has ended (deleted): those go on to their own end. A run
    cancelled by ``overlap: cancel_previous`` (the schedule still running) is cancelled."""
    if state is None or not state.status.terminal or state.spec_error:
        return True
    try:
        return state.spec.node(body.node).schedule is None
    except KeyError:
        return True


def _claims_signals(state: WorkflowState) -> bool:
    """Whether the workflow is a schedule (its signals are pause and resume)."""
    return schedule_node(state) is not None


# -- how its events change the state ------------------------------------------------------
# A schedule node keeps, in its ``NodeState``: the armed fire time (``next_fire_ms``, also
# its timer ``schedule:<node>`` in ``state.timers``), the last fire time that came due
# (``last_fire_ms``) and whether it is paused. Its runs are its tasks (index k = the k-th
# run started, so ``next_index`` counts them) while they run: the end of a run removes its
# task, so the state holds the runs still running, not every run ever started
# (docs/architecture.md, invariant 7). The ended runs are workflows of their own.

def _schedule_node(state: WorkflowState, node_id: str) -> NodeState:
    node = state.nodes.get(node_id)
    if node is None or state.spec.node(node_id).schedule is None:
        raise IllegalTransition(f"no schedule node {node_id} in workflow {state.workflow_id}")
    return node


def _schedule_armed(state: WorkflowState, body: ev.ScheduleArmed) -> None:
    """The schedule runs; its timer is armed for the next fire time."""
    node = _schedule_node(state, body.node)
    node.status = NodeStatus.RUNNING
    node.next_fire_ms = body.fire_ms
    state.timers[schedule_timer_id(body.node)] = TimerState(body.fire_ms, body.node, None, 0)


def _schedule_fired(state: WorkflowState, body: ev.ScheduleFired) -> None:
    """A fire time came due (its run, if started, is the ``TaskDispatched`` that
    follows)."""
    node = _schedule_node(state, body.node)
    node.last_fire_ms = max(node.last_fire_ms or body.fire_ms, body.fire_ms)


def _schedule_paused(state: WorkflowState, body: ev.SchedulePaused) -> None:
    """Paused: its fire times are skipped until it is resumed."""
    _schedule_node(state, body.node).paused = True
    if body.signal_id:
        state.signal_ids.append(body.signal_id)


def _schedule_resumed(state: WorkflowState, body: ev.ScheduleResumed) -> None:
    """Resumed (a ``ScheduleArmed`` follows)."""
    _schedule_node(state, body.node).paused = False
    if body.signal_id:
        state.signal_ids.append(body.signal_id)


def _run_ended(state: WorkflowState, node_id: str, index: int | None) -> None:
    """Remove the task of a run whose attempt has just ended (after the changes of its
    ``TaskFailed`` or ``TaskCancelled``): the state holds the runs still running."""
    state.tasks.pop(task_key(node_id, index), None)


def _run_succeeded(state: WorkflowState, body: ev.TaskSucceeded) -> None:
    """A run succeeded: its task goes (its output is the run's own, not the node's)."""
    _run_ended(state, body.node, body.index)


def _parse(raw: Mapping[str, Any], where: str, work: Work,
           validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    """A schedule's fields: its cron, policies and the workflow each run starts."""
    schedule, child = parse_schedule(raw, where, validate, faults)
    return KindParts(child=child, schedule=schedule)


UNIT = KindUnit(NodeKind.SCHEDULE, SCHEDULE_KEYS, start, attempt_succeeded, attempt_failed,
                parse=_parse, describe=DESCRIBE, follow=FOLLOW, timer_prefix=SCHEDULE_TIMER,
                timer_fired=fired,
                signal_sent=signal_sent,
                claims_signals=_claims_signals,
                events={ev.ScheduleArmed: _schedule_armed, ev.ScheduleFired: _schedule_fired,
                        ev.SchedulePaused: _schedule_paused,
                        ev.ScheduleResumed: _schedule_resumed},
                evolution=KindEvolution(task_succeeded=_run_succeeded,
                                        attempt_ended=_run_ended))
"""The ``schedule`` kind."""
