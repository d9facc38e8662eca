"""A cancel that reaches the coordinator before its workflow's submission (the two
travel on different topics) waits for it in the table and is applied with it: the
workflow ends ``cancelled`` without a dispatch, also across crashes at every fault point
and every redelivery order."""

from __future__ import annotations

import pytest
from test_coordinator_redelivery import (
    AT,
    KILL_POINTS,
    SPEC,
    TOPICS,
    WF,
    Bus,
    DeadBus,
    Killed,
    LocalStore,
    Table,
    check_history,
    interleavings,
    kill_at,
    rec,
)

from headwater.core import events as ev
from headwater.core.machine import DEFERRED_WINDOW_MS, MAX_DEFERRED
from services.coordinator import deferred
from services.coordinator import inputs as inputs_module
from services.coordinator.batch import BatchApplier
from services.coordinator.timers import TimerIndex

__all__ = ["DeadBus", "kill_at"]  # shared with the redelivery tests

CANCEL = rec(TOPICS.control, 0, ev.CancelRequested(WF, AT - 3, "changed my mind"))
SUBMIT = rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, SPEC, {}, AT))


def applier(bus: Bus, table: Table) -> BatchApplier:
    return BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)


def check_cancelled(bus: Bus, table: Table, dispatched: bool = False) -> None:
    """The workflow ended cancelled, its history whole; without a dispatch unless the
    submission was applied before the cancel (``dispatched``)."""
    check_history(bus, table)
    history = sorted({e.seq: e for e in bus.events()}.values(), key=lambda e: e.seq)
    assert history[-1].type == "WorkflowCancelled"
    if not dispatched:
        assert [e.type for e in history] == [
            "WorkflowAccepted", "NodeFinished", "NodeFinished", "WorkflowCancelled"]
        assert not any(r.topic.startswith(TOPICS.tasks("")) for r in bus.records)
    assert deferred.load(table.get_entry(deferred.deferred_key(WF)))[0] == []


async def test_a_cancel_before_its_submission_waits_and_cancels_it() -> None:
    bus, table = Bus(), Table()
    coordinator = applier(bus, table)
    await coordinator.apply_batch([CANCEL])
    assert bus.events() == []
    kept, offsets = deferred.load(table.get_entry(deferred.deferred_key(WF)))
    assert [type(i).__name__ for i in kept] == ["CancelRequested"]
    assert offsets == {TOPICS.control: 0}
    await coordinator.apply_batch([SUBMIT])
    check_cancelled(bus, table)
    assert table.applied(WF) == {TOPICS.control: 0, TOPICS.submissions: 0}


async def test_a_cancel_and_its_submission_in_one_batch() -> None:
    bus, table = Bus(), Table()
    await applier(bus, table).apply_batch([CANCEL, SUBMIT])
    check_cancelled(bus, table)


async def test_a_cancel_delivered_again_waits_once() -> None:
    bus, table = Bus(), Table()
    coordinator = applier(bus, table)
    await coordinator.apply_batch([CANCEL])
    table.clear_cache()
    await applier(bus, table).apply_batch([CANCEL])  # redelivered before its commit
    assert len(deferred.load(table.get_entry(deferred.deferred_key(WF)))[0]) == 1


async def test_a_cancel_long_before_a_submission_is_dead_lettered_and_the_run_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The inputs keep the times written in them: the coordinator's receipt times."""
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)
    bus, table = DeadBus(), Table()
    old = rec(TOPICS.control, 0, ev.CancelRequested(WF, AT - DEFERRED_WINDOW_MS - 1, "r"))
    await applier(bus, table).apply_batch([old])
    await applier(bus, table).apply_batch([SUBMIT])
    assert [e.type for e in bus.events()][:2] == ["WorkflowAccepted", "TaskDispatched"]
    state = table.load(WF)
    assert state is not None and state.status.value == "running"
    [dead] = bus.dead
    assert dead.record.topic == TOPICS.control and dead.record.key == WF.encode()
    assert "arrived 600 s before its submission" in dead.reason
    assert deferred.load(table.get_entry(deferred.deferred_key(WF)))[0] == []


async def test_a_workflow_never_submitted_keeps_a_bounded_number_of_inputs() -> None:
    bus, table = DeadBus(), Table()
    cancels = [rec(TOPICS.control, i, ev.CancelRequested(WF, AT + i))
               for i in range(MAX_DEFERRED + 2)]
    await applier(bus, table).apply_batch(cancels)
    kept = deferred.load(table.get_entry(deferred.deferred_key(WF)))[0]
    assert len(kept) == MAX_DEFERRED
    assert len(bus.dead) == 2 and "never submitted" in bus.dead[0].reason


@pytest.mark.parametrize("point", KILL_POINTS)
@pytest.mark.parametrize("killed", ["cancel", "submission"])
async def test_a_crash_around_the_waiting_cancel_changes_nothing(
        point: str, killed: str, kill_at: dict[str, str | None]) -> None:
    """Killed at ``point`` while applying the cancel (alone) or the submission (after
    the cancel's batch, uncommitted): after recovery both come again, in each order."""
    bus, table = Bus(), Table()
    first = applier(bus, table)
    if killed == "submission":
        await first.apply_batch([CANCEL])
    kill_at["point"] = point
    with pytest.raises(Killed):
        await first.apply_batch([CANCEL] if killed == "cancel" else [SUBMIT])
    for order in interleavings([CANCEL, SUBMIT]):
        trial_bus, trial_table = Bus(), Table()
        trial_bus.records = list(bus.records)
        trial_table.table.data = LocalStore(table.table.data)
        again = applier(trial_bus, trial_table)
        await again.recover({0})
        await again.apply_batch(order)
        cancel_landed = killed == "submission" or point != "coordinator.before_intent"
        check_cancelled(trial_bus, trial_table, dispatched=not cancel_landed
                        and order[0] is SUBMIT)


SAMPLES: list[ev.Input] = [
    ev.CancelRequested("wf-w", 10, "stop"),
    ev.SignalSent("wf-w", "approval", 11, None, "s-1", {"approved": True}),
    ev.SignalSent("wf-w", "review", 12, 3, "", None),
    ev.TimerFired("wf-w", "retry:a:2", 13),
    ev.TaskStarted("wf-w", "a", None, 1, 14, "w"),
]


@pytest.mark.parametrize("event", SAMPLES, ids=[type(e).__name__ for e in SAMPLES])
def test_every_input_the_machine_defers_can_wait_in_the_table(event: ev.Input) -> None:
    """An input ``step`` defers for a workflow not submitted yet is kept in the table
    and read back whole; a signal that overtook its submission once could not be read
    back, and every later input of its workflow was dead-lettered."""
    from headwater.core.machine import step
    from services.coordinator import deferred

    if not step(None, event).deferred:
        return  # changes nothing for an unknown workflow: never kept
    inputs, applied = deferred.load(deferred.dump([event, event], {"control": 7}))
    assert inputs == [event, event] and applied == {"control": 7}
