"""Kills at every fault point (recovery's ``after_redo`` too) around a waiting cancel: the
cancel and its submission in one batch or two, with a second cancel after the
submission, offsets committed up to each batch, redelivered in every interleaving,
as one batch or one record per batch."""

from __future__ import annotations

import pytest
from test_coordinator_deferred import CANCEL, SUBMIT
from test_coordinator_redelivery import (
    AT,
    KILL_POINTS,
    TOPICS,
    WF,
    Bus,
    Killed,
    LocalStore,
    Table,
    check_history,
    interleavings,
    kill_at,
    rec,
)

from headwater.core import events as ev
from services.coordinator import deferred
from services.coordinator.batch import BatchApplier
from services.coordinator.records import InputRecord
from services.coordinator.timers import TimerIndex

__all__ = ["kill_at"]

CANCEL2 = rec(TOPICS.control, 1, ev.CancelRequested(WF, AT + 50, "again"))
LAYOUTS = {
    "one batch": [[CANCEL, SUBMIT]],
    "two batches": [[CANCEL], [SUBMIT]],
    "cancel, submit+cancel": [[CANCEL], [SUBMIT, CANCEL2]],
    "all in one": [[CANCEL, SUBMIT, CANCEL2]],
    "cancel+cancel, submit": [[CANCEL, CANCEL2], [SUBMIT]],
}


def applier(bus: Bus, table: Table) -> BatchApplier:
    return BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)


def clone(bus: Bus, table: Table) -> tuple[Bus, Table]:
    b, t = Bus(), Table()
    b.records = list(bus.records)
    t.table.data = LocalStore(table.table.data)
    return b, t


def check(bus: Bus, table: Table, cancel_first: bool) -> None:
    check_history(bus, table)
    history = sorted({e.seq: e for e in bus.events()}.values(), key=lambda e: e.seq)
    assert history[-1].type == "WorkflowCancelled"
    assert deferred.load(table.get_entry(deferred.deferred_key(WF)))[0] == []
    if cancel_first:
        assert not any(r.topic.startswith(TOPICS.tasks("")) for r in bus.records)
    reasons = [e.body.reason for e in history if e.type == "WorkflowCancelled"]
    assert len(reasons) == 1


CASES = [(layout, k, point, committed, redo_killed)
         for layout, batches in LAYOUTS.items()
         for k in range(len(batches))
         for point in KILL_POINTS
         for committed in range(k + 1)
         for redo_killed in ((False, True) if point != "coordinator.before_intent"
                             else (False,))]


@pytest.mark.parametrize(("layout", "k", "point", "committed", "redo_killed"), CASES)
@pytest.mark.parametrize("one_by_one", [False, True])
async def test_every_kill_around_a_waiting_cancel(
        layout: str, k: int, point: str, committed: int, redo_killed: bool,
        one_by_one: bool, kill_at: dict[str, str | None]) -> None:
    batches = LAYOUTS[layout]
    bus, table = Bus(), Table()
    first = applier(bus, table)
    for b in batches[:k]:
        await first.apply_batch(b)
    kill_at["point"] = point
    with pytest.raises(Killed):
        await first.apply_batch(batches[k])
    if redo_killed:
        table.clear_cache()
        kill_at["point"] = "coordinator.after_redo"
        with pytest.raises(Killed):
            await applier(bus, table).recover({0})
    uncommitted: list[InputRecord] = [r for b in batches[committed:] for r in b]
    for order in interleavings(uncommitted):
        b2, t2 = clone(bus, table)
        again = applier(b2, t2)
        await again.recover({0})
        # the cancel was durable before any submission took effect: no dispatch allowed
        cancel_first = (t2.load(WF) is None
                        and bool(deferred.load(t2.get_entry(deferred.deferred_key(WF)))[0])) or (
            t2.load(WF) is not None and not any(
                r.topic.startswith(TOPICS.tasks("")) for r in b2.records))
        if t2.load(WF) is None and not cancel_first:
            cancel_first = order.index(CANCEL) < order.index(SUBMIT)
        if one_by_one:
            for r in order:
                await again.apply_batch([r])
        else:
            await again.apply_batch(order)
        rest = [r for b in batches[k + 1:] for r in b if r not in uncommitted]
        if rest:
            await again.apply_batch(rest)
        check(b2, t2, cancel_first)
