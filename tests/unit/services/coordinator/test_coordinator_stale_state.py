"""A batch is decided from the state the table will hold once the batch before it is
written, never from an older one: the timer loop's scan after a restart or a rebalance
(``TableStore.scan``, which decodes and caches the live workflows) may run while a
batch's intent is being written, when the table still holds the states from before it.

Seen in the fault suite (``coordinator.after_intent``): a map workflow failed in the
first batch after a restart (seq 16-30, ending ``WorkflowFailed``); the scan ran while
that batch's intent was written, read the workflow at seq 15 from the table and cached
it; the next batch applied a ``TaskSucceeded`` to that copy and published seq 16-36
again, with other bodies. Should a stale copy come back another way, the batch is
refused before its intent (``seq_guard``): a named failure, not a second history."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from test_coordinator_redelivery import AT, TOPICS, Bus, Table, conflicts

from headwater import codec
from headwater.core import events as ev
from services.coordinator import batch as batch_module
from services.coordinator import inputs as inputs_module
from services.coordinator import metrics, seq_guard
from services.coordinator.batch import BatchApplier
from services.coordinator.keys import table_entry_key
from services.coordinator.records import InputRecord
from services.coordinator.timers import TimerIndex, TimerLoop

WF = "wf-stale"
PAIR = {"name": "pair", "nodes": [{"id": "a", "task": "t.a"}, {"id": "b", "task": "t.b"}]}


@pytest.fixture(autouse=True)
def producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


def rec(topic: str, offset: int, value: Any) -> InputRecord:
    return InputRecord(topic, 0, offset, WF.encode(), codec.encode(value), [])


SUBMITTED = rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, PAIR, {}, AT))
A_REFUSED = rec(TOPICS.reports, 0, ev.TaskFailed(WF, "a", None, 1, AT + 5, "no", "E",
                                                 retryable=False))
A_DONE = rec(TOPICS.reports, 0, ev.TaskSucceeded(WF, "a", None, 1, AT + 5, 1))
B_DONE = rec(TOPICS.reports, 1, ev.TaskSucceeded(WF, "b", None, 1, AT + 6, 2))


async def fired(send: Any) -> None:
    """A timer loop's ``send``: nothing is due in these tests."""


def during_the_intent(monkeypatch: pytest.MonkeyPatch, table: Table,
                      rebalance: bool = False) -> list[asyncio.Task[None]]:
    """Once, while the next batch's intent is being written: the timer loop's first tick
    after a restart (its scan), after a rebalance's reset of the cache if ``rebalance``."""
    ticks: list[asyncio.Task[None]] = []
    loop = TimerLoop(TimerIndex(), table.scan, fired, lambda: False)

    def point(name: str) -> None:
        if name == "coordinator.before_intent" and not ticks:
            if rebalance:
                table.clear_cache()
            ticks.append(asyncio.get_running_loop().create_task(loop.tick()))

    monkeypatch.setattr(batch_module.faults, "point", point)
    return ticks


async def started(bus: Bus, table: Table) -> BatchApplier:
    """A process restarted on a table holding ``WF`` running (its cache empty)."""
    await BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20).apply_batch([SUBMITTED])
    table.clear_cache()
    return BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)


async def test_a_workflow_that_ended_while_the_scan_ran_is_not_stepped_again_from_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    bus, table = Bus(), Table()
    applier = await started(bus, table)
    ticks = during_the_intent(monkeypatch, table)
    await applier.apply_batch([A_REFUSED])  # the workflow fails
    await asyncio.gather(*ticks)
    assert ticks, "the scan did not run while the intent was written"
    await applier.apply_batch([B_DONE])  # a late report: changes nothing
    assert conflicts(bus.events()) == {}
    assert bus.events()[-1].type == "WorkflowFailed"
    state = table.load(WF)
    assert state is not None and state.status == "failed"


async def test_a_rebalance_and_scan_while_an_intent_is_written_leave_the_batchs_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    bus, table = Bus(), Table()
    applier = await started(bus, table)
    ticks = during_the_intent(monkeypatch, table, rebalance=True)
    await applier.apply_batch([A_DONE])  # still running: b is pending
    await asyncio.gather(*ticks)
    await applier.apply_batch([B_DONE])  # the workflow succeeds
    events = bus.events()
    assert conflicts(events) == {}
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].type == "WorkflowSucceeded"


async def test_the_ended_workflow_is_not_kept_in_the_cache_once_written() -> None:
    """What the store holds for a batch in flight goes once its entries are written: the
    cache grows with the live workflows only."""
    bus, table = Bus(), Table()
    applier = await started(bus, table)
    await applier.apply_batch([A_REFUSED])
    assert WF not in table._cache and WF not in table._unwritten
    state = table.get(WF)
    assert state is not None and state.status == "failed"  # read back from the table


async def test_a_batch_decided_from_a_state_behind_the_table_is_refused_before_its_intent(
        caplog: pytest.LogCaptureFixture) -> None:
    """Defence in depth: a stale copy planted in the cache (as the scan left one before
    the fix) makes the batch fail, named, with nothing written or published; the inputs
    come again to a process that reads the table."""
    bus, table = Bus(), Table()
    applier = await started(bus, table)
    before = table.load(WF)  # a copy decoded from the table, at seq 3
    assert before is not None
    await applier.apply_batch([A_REFUSED])
    published, entries = list(bus.records), dict(table.entries_)
    table._cache[WF] = before  # what the scan cached
    refused = metrics_value()
    with caplog.at_level(logging.ERROR), pytest.raises(seq_guard.StaleState) as raised:
        await applier.apply_batch([B_DONE])
    assert f"{WF} at seq 4, its table header at seq 8" in str(raised.value)
    assert "behind the table" in caplog.text
    assert metrics_value() == refused + 1
    assert bus.records == published and table.entries_ == entries  # nothing of it landed
    table.clear_cache()  # the process restarts; the input comes again
    again = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    await again.apply_batch([B_DONE])
    assert conflicts(bus.events()) == {} and bus.records == published


def metrics_value() -> float:
    value = metrics.REGISTRY.get_sample_value("headwater_coordinator_stale_states_total")
    return value or 0.0


def test_behind_names_each_workflow_whose_first_seq_does_not_follow_its_header() -> None:
    headers = {table_entry_key("w1"): b'{"seq": 4}', table_entry_key("w2"): b'{"seq": 9}'}
    started = ev.TaskStarted("w", "a", None, 1, AT, "x")
    out = [ev.HistoryEvent("w0", 1, started),  # no header: a new workflow
           ev.HistoryEvent("w1", 5, started), ev.HistoryEvent("w1", 6, started),
           ev.HistoryEvent("w2", 3, started), ev.HistoryEvent("w2", 4, started),
           ev.HistoryEvent("w3", 2, started)]  # no header, yet not its first event
    found = seq_guard.behind(out, headers.get)
    assert found == {"w2": (3, 9), "w3": (2, 0)}
    assert seq_guard.behind(out[:3], headers.get) == {}
