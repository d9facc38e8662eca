"""The stale-state guard (``seq_guard``) lets every legitimate batch through, and the
store's states of a batch in flight (``TableStore._unwritten``) never outlive it: a
refused legitimate batch would stop the coordinator on every restart (its inputs come
again), and a state left behind would be answered for ever instead of the table's."""

from __future__ import annotations

from typing import Any

import pytest
from test_coordinator_redelivery import AT, SPEC, TOPICS, WF, Bus, Table, conflicts, rec

from headwater import codec
from headwater.core import events as ev
from headwater.core import retention as core_retention
from headwater.core.kinds.wait.records import SignalSent
from services.coordinator import inputs as inputs_module
from services.coordinator.batch import BatchApplier
from services.coordinator.records import DeadLetter, InputRecord, Outgoing
from services.coordinator.timers import TimerIndex

RETENTION_MS = 60_000
DONE_AT = AT + 600
SUBMITTED = rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, SPEC, {}, AT))
RUN = [
    SUBMITTED,
    rec(TOPICS.reports, 0, ev.TaskStarted(WF, "f", None, 1, AT + 10, "w-1")),
    rec(TOPICS.reports, 1, ev.TaskSucceeded(WF, "f", None, 1, AT + 20, {"ok": 1})),
    rec(TOPICS.reports, 2, ev.TaskStarted(WF, "g", None, 1, AT + 30, "w-1")),
    rec(TOPICS.reports, 3, ev.TaskSucceeded(WF, "g", None, 1, DONE_AT, {"ok": 2})),
]
LATE = rec(TOPICS.reports, 4, ev.TaskSucceeded(WF, "g", None, 1, DONE_AT + 5, {"ok": 3}))


@pytest.fixture(autouse=True)
def producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


def applier(bus: Any, table: Table) -> BatchApplier:
    a = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    a.retention_ms = RETENTION_MS
    return a


def restarted(bus: Any, table: Table) -> BatchApplier:
    table.clear_cache()
    return applier(bus, table)


def purge(offset: int, at_ms: int) -> Any:
    return rec(TOPICS.control, offset, ev.TimerFired(WF, core_retention.RETENTION_TIMER,
                                                     at_ms))


async def test_a_purge_and_a_late_report_in_one_batch_then_after_a_restart() -> None:
    """The report after the purge records no event, and the store does not keep the
    workflow: the report read it back from the table (the purge's entries were not
    written yet) and the cache held it after the purge, answering for a purged
    workflow until the next rebalance (its marker then unread)."""
    bus, table = Bus(), Table()
    await applier(bus, table).apply_batch(RUN)
    published = len(bus.records)
    await restarted(bus, table).apply_batch([purge(0, DONE_AT + RETENTION_MS), LATE])
    assert table.get(WF) is None and not table._unwritten
    await restarted(bus, table).apply_batch([LATE, purge(1, DONE_AT + 2 * RETENTION_MS)])
    assert table.get(WF) is None and not table._unwritten and not table._cache
    assert len(bus.records) == published


async def test_a_signal_before_the_submission_is_kept_then_taken_after_a_restart() -> None:
    """An input for a workflow with no header yet records no event (it waits for the
    submission), so the guard has nothing to compare; the submission then starts at 1."""
    bus, table = Bus(), Table()
    signal = rec(TOPICS.control, 0, SignalSent(WF, "go", AT - 5, signal_id="s-1"))
    await applier(bus, table).apply_batch([signal])
    assert bus.events() == [] and not table._unwritten
    await restarted(bus, table).apply_batch(RUN)
    events = bus.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert not table._unwritten and conflicts(events) == {}


class FailingBus(Bus):
    """A broker that refuses every record (the coordinator's process then ends)."""

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        raise ConnectionError("broker gone")


async def test_a_batch_that_cannot_be_carried_out_leaves_no_state_behind() -> None:
    """Its intent landed, its entries were written, then publishing failed: the store
    answers from the table again (the redo carries the batch out), and holds nothing of
    it in memory."""
    bus, table = Bus(), Table()
    await applier(bus, table).apply_batch(RUN[:1])
    failing = applier(FailingBus(), table)
    with pytest.raises(ConnectionError):
        await failing.apply_batch(RUN[1:3])
    assert not table._unwritten and WF not in table._cache
    again = restarted(bus, table)
    await again.recover({0})
    await again.apply_batch(RUN[1:])
    events = bus.events()
    assert conflicts(events) == {} and events[-1].type == "WorkflowSucceeded"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert not table._unwritten


async def test_many_batches_leave_the_store_holding_the_live_workflows_alone() -> None:
    """A batch's states leave ``_unwritten`` once written, batch after batch: 50 runs
    to their end, 50 more started, leave 50 cached and none unwritten."""
    bus, table = Bus(), Table()
    coordinator = applier(bus, table)
    for n in range(100):
        wid = f"wf-{n}"
        first = [ev.WorkflowSubmitted(wid, SPEC, {}, AT)]
        rest = [ev.TaskStarted(wid, "f", None, 1, AT + 10, "w"),
                ev.TaskSucceeded(wid, "f", None, 1, AT + 20, 1),
                ev.TaskStarted(wid, "g", None, 1, AT + 30, "w"),
                ev.TaskSucceeded(wid, "g", None, 1, AT + 40, 2)] if n < 50 else []
        await coordinator.apply_batch([_rec(TOPICS.submissions, n, wid, first[0])])
        for i, e in enumerate(rest):
            await coordinator.apply_batch([_rec(TOPICS.reports, 4 * n + i, wid, e)])
    assert not table._unwritten
    assert sorted(table._cache) == sorted(f"wf-{n}" for n in range(50, 100))


def _rec(topic: str, offset: int, wid: str, value: Any) -> InputRecord:
    return InputRecord(topic, 0, offset, wid.encode(), codec.encode(value), [])


RESTART_SPEC = {"name": "restart", "restart_on_failure": True, "max_restarts": 1,
                "nodes": [{"id": "f", "task": "t.f", "heartbeat_timeout": 3}]}


async def test_a_new_generation_after_a_lost_attempt_then_a_restart_goes_on() -> None:
    """A lost lease restarts the run (``WorkflowRestarted``: a new generation, seqs
    numbered on), each batch in a new process: the guard refuses none, and the old
    attempt's late report is fenced as superseded, recording nothing twice."""
    bus, table = Bus(), Table()
    rid = "wf-restart"
    batches = [
        [_rec(TOPICS.submissions, 0, rid, ev.WorkflowSubmitted(rid, RESTART_SPEC, {}, AT))],
        [_rec(TOPICS.reports, 0, rid, ev.TaskStarted(rid, "f", None, 1, AT + 10, "w-1"))],
        [_rec(TOPICS.control, 0, rid, ev.TimerFired(rid, "lease:f:1", AT + 10_000))],
        [_rec(TOPICS.reports, 1, rid, ev.TaskSucceeded(rid, "f", None, 1, AT + 10_010, 1)),
         _rec(TOPICS.reports, 2, rid, ev.TaskStarted(rid, "f", None, 2, AT + 10_020, "w"))],
        [_rec(TOPICS.reports, 3, rid, ev.TaskSucceeded(rid, "f", None, 2, AT + 10_030, 2))],
    ]
    for batch in batches:
        await restarted(bus, table).apply_batch(batch)
    events = [e for e in bus.events() if e.workflow_id == rid]
    assert "WorkflowRestarted" in [e.type for e in events]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].type == "WorkflowSucceeded" and conflicts(events) == {}
    assert not table._unwritten
