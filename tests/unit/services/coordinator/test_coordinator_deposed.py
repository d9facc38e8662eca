"""A process that lost its partitions while it stood still, and wrote its batch's intent
once it resumed (the stop fell between its last fence check and the intent): the new
owner had applied the same input since, with another receipt time. Whoever recovers the
partition next must refuse that intent (``Intent.moved_on``): carrying it out would
publish the new owner's seqs again with other bodies and set the workflow back."""

from __future__ import annotations

import pytest
from test_coordinator_redelivery import (
    AT,
    INPUTS,
    TOPICS,
    WF,
    DeadBus,
    Killed,
    Table,
    check_history,
    kill_at,
    rec,
)

from headwater.core import events as ev
from services.coordinator import inputs as inputs_module
from services.coordinator.batch import BatchApplier
from services.coordinator.keys import intent_key
from services.coordinator.timers import TimerIndex

__all__ = ["kill_at"]


@pytest.fixture(autouse=True)
def producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two owners' receipt times are written into the inputs below."""
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


def applier(bus: DeadBus, table: Table) -> BatchApplier:
    return BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)


async def test_an_intent_written_by_a_deposed_owner_is_refused_on_recovery(
        kill_at: dict[str, str | None]) -> None:
    bus, table = DeadBus(), Table()
    await applier(bus, table).apply_batch(INPUTS[:2])  # submitted, f started
    kill_at["point"] = "coordinator.after_intent"  # A: the intent lands, then it stops
    with pytest.raises(Killed):
        await applier(bus, table).apply_batch([INPUTS[2]])  # f failed, received at AT+20
    slot = {k: v for k, v in table.entries_.items() if k.startswith(intent_key(0))}
    assert slot
    for k in slot:  # ... but the slot reaches the changelog only after B's writes
        del table.entries_[k]
    b = applier(bus, table)
    await b.recover({0})
    failed_late = ev.TaskFailed(WF, "f", None, 1, AT + 9_000, "boom", "E")
    await b.apply_batch([rec(TOPICS.reports, 1, failed_late), INPUTS[3]])
    published = list(bus.records)
    table.entries_.update(slot)  # A resumed: its intent lands in B's partition

    c = applier(bus, table)
    await c.recover({0})
    assert bus.records == published  # nothing of A's batch was published
    assert [d.reason for d in bus.dead] == [bus.dead[0].reason]
    assert bus.dead[0].reason.startswith("stale intent of partition 0: table entry")
    check_history(bus, table)  # one body per seq, and the table folds from them
    failures = [e for e in bus.events() if isinstance(e.body, ev.TaskFailed)]
    assert [e.body.at_ms for e in failures] == [AT + 9_000]


async def test_an_intent_of_a_process_that_died_is_still_carried_out(
        kill_at: dict[str, str | None]) -> None:
    """The check refuses nothing a crash leaves: after every fault point the slot's
    keys hold what the batch found or what it writes."""
    for point in ("coordinator.after_intent", "coordinator.after_publish"):
        bus, table = DeadBus(), Table()
        await applier(bus, table).apply_batch(INPUTS[:2])
        kill_at["point"] = point
        with pytest.raises(Killed):
            await applier(bus, table).apply_batch(INPUTS[2:4])
        await applier(bus, table).recover({0})
        assert bus.dead == [], point
        check_history(bus, table)
        assert any(isinstance(e.body, ev.TaskFailed) for e in bus.events()), point
