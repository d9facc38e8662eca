"""Leases in the coordinator: heartbeats kept out of the history move their attempt's lease
in the timer index and write nothing (unless ``history_heartbeats`` asks for them to be
recorded); an attempt a fired timer ends is told to stop at once."""

from __future__ import annotations

from typing import Any

import pytest
from test_coordinator_redelivery import AT, SPEC, TOPICS, WF, Bus, Table, rec

from headwater import codec
from headwater.core import events as ev
from headwater.core.ids import LEASE_TIMER, task_timer_id
from headwater.core.machine.reports import lease_renewal
from services.coordinator import inputs as inputs_module
from services.coordinator.batch import BatchApplier
from services.coordinator.timers import TimerIndex

LEASE = task_timer_id(LEASE_TIMER, "f", 1)
HEARTBEAT_MS = 30_000  # the spec's default heartbeat_timeout


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The coordinator's clock as it stamps inputs (``inputs.now_ms``); set ``[0]``."""
    now = [AT]
    monkeypatch.setattr(inputs_module, "now_ms", lambda: now[0])
    return now


async def started(clock: list[int], history_heartbeats: bool = False,
                  ) -> tuple[BatchApplier, Bus, Table, TimerIndex]:
    bus, table, timers = Bus(), Table(), TimerIndex()
    applier = BatchApplier(TOPICS, bus, table, timers, 16 << 20)
    applier.history_heartbeats = history_heartbeats
    await applier.apply_batch([rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, SPEC, {}, 0))])
    await applier.apply_batch([rec(TOPICS.reports, 0, ev.TaskStarted(WF, "f", None, 1, 0, "w"))])
    return applier, bus, table, timers


async def test_a_heartbeat_moves_the_lease_and_writes_nothing(clock: list[int]) -> None:
    applier, bus, table, timers = await started(clock)
    records, entries = list(bus.records), dict(table.entries_)
    clock[0] = AT + 20_000
    await applier.apply_batch([rec(TOPICS.reports, 1, ev.TaskHeartbeated(WF, "f", None, 1, 0))])
    assert bus.records == records and table.entries_ == entries  # no history, entry, intent
    assert timers.pop_due(AT + HEARTBEAT_MS) == []  # the recorded start's lease has moved
    assert timers.pop_due(AT + 20_000 + HEARTBEAT_MS) == [(WF, LEASE, AT + 20_000 + HEARTBEAT_MS)]


async def test_the_lease_fires_once_no_heartbeat_came_for_the_timeout(clock: list[int]) -> None:
    """The fired lease is checked against the last recorded report (the start), older
    than the renewal: the attempt is lost and retried."""
    applier, bus, _, timers = await started(clock)
    clock[0] = AT + 20_000
    await applier.apply_batch([rec(TOPICS.reports, 1, ev.TaskHeartbeated(WF, "f", None, 1, 0))])
    [(_, timer_id, due)] = timers.pop_due(AT + 20_000 + HEARTBEAT_MS)
    clock[0] = due
    await applier.apply_batch([rec(TOPICS.control, 0, ev.TimerFired(WF, timer_id, due))])
    failed = [e.body for e in bus.events() if isinstance(e.body, ev.TaskFailed)]
    assert [(f.error_type, f.at_ms) for f in failed] == [("HeartbeatTimeout", due)]


async def test_a_heartbeat_of_an_attempt_that_must_end_is_told_to_stop(
        clock: list[int]) -> None:
    applier, bus, _, _ = await started(clock)
    before = len(bus.records)
    await applier.apply_batch([rec(TOPICS.reports, 1, ev.TaskHeartbeated(WF, "f", None, 0, 0))])
    assert [r.topic for r in bus.records[before:]] == [TOPICS.worker_control]  # superseded
    await applier.apply_batch([rec(TOPICS.control, 0, ev.CancelRequested(WF, 0, "stop"))])
    before = len(bus.records)
    await applier.apply_batch([rec(TOPICS.reports, 2, ev.TaskHeartbeated(WF, "f", None, 1, 0))])
    assert [r.topic for r in bus.records[before:]] == [TOPICS.worker_control]  # cancelled


async def test_with_history_heartbeats_on_a_heartbeat_is_recorded(clock: list[int]) -> None:
    applier, bus, _, _ = await started(clock, history_heartbeats=True)
    clock[0] = AT + 20_000
    await applier.apply_batch([rec(TOPICS.reports, 1, ev.TaskHeartbeated(WF, "f", None, 1, 0))])
    assert [type(e.body).__name__ for e in bus.events()][-1] == "TaskHeartbeated"


def test_lease_renewal_renews_only_the_running_attempt() -> None:
    from machine_harness import started as started_state
    from machine_harness import submit

    from headwater.core.machine import step

    doc = {"name": "one", "nodes": [{"id": "f", "task": "t"}]}
    queued = step(None, submit(doc, {})).state
    assert queued is not None
    assert lease_renewal(queued, ev.TaskHeartbeated(WF, "f", None, 1, 5)) is None  # not running
    running = step(queued, started_state("f")).state
    assert running is not None
    wid = running.workflow_id
    assert lease_renewal(running, ev.TaskHeartbeated(wid, "f", None, 1, 5)) == (
        LEASE, 5 + HEARTBEAT_MS)
    assert lease_renewal(running, ev.TaskHeartbeated(wid, "f", None, 2, 5)) is None  # not its
    assert lease_renewal(running, ev.TaskHeartbeated(wid, "g", None, 1, 5)) is None
    assert lease_renewal(None, ev.TaskHeartbeated(wid, "f", None, 1, 5)) is None


async def test_an_attempt_a_timer_ended_is_told_to_stop_at_once(clock: list[int]) -> None:
    """The lease expired: the worker that runs (or has queued) the attempt gets a
    ``TaskCancelled`` on worker-control now, not at its next report."""
    applier, bus, _, timers = await started(clock)
    [(_, timer_id, due)] = timers.pop_due(AT + HEARTBEAT_MS)
    clock[0] = due
    before = len(bus.records)
    await applier.apply_batch([rec(TOPICS.control, 0, ev.TimerFired(WF, timer_id, due))])
    stops = [codec.decode(r.value) for r in bus.records[before:]
             if r.topic == TOPICS.worker_control]
    assert [(s.node, s.attempt) for s in stops] == [("f", 1)]
    assert "lost: no heartbeat" in stops[0].reason


async def test_a_lease_fired_before_the_heartbeats_were_read_is_not_applied(
        clock: list[int]) -> None:
    """The lease came due in the index and fired, and the heartbeats queued behind it on
    ``reports`` were read before the firing was applied: the attempt lives on, and its
    lease is armed again for when it really ends (found by trying: 4 of 4 live attempts
    were lost after a 4.5 s SIGSTOP)."""
    applier, bus, _, timers = await started(clock)
    [(_, timer_id, due)] = timers.pop_due(AT + HEARTBEAT_MS)  # fired: on its way
    clock[0] = due - 1_000
    await applier.apply_batch([rec(TOPICS.reports, 1, ev.TaskHeartbeated(WF, "f", None, 1, 0))])
    clock[0] = due + 50
    before = len(bus.records)
    await applier.apply_batch([rec(TOPICS.control, 0, ev.TimerFired(WF, timer_id, due))])
    assert bus.records[before:] == []  # not lost, nothing recorded
    assert timers.pop_due(due - 1_000 + HEARTBEAT_MS) == [
        (WF, timer_id, due - 1_000 + HEARTBEAT_MS)]


async def test_a_lease_fired_by_the_last_owner_gets_the_full_lease_of_a_takeover(
        clock: list[int]) -> None:
    applier, bus, _, timers = await started(clock)
    clock[0] = AT + HEARTBEAT_MS + 5_000
    timers.clear()
    timers.leases_from_ms = clock[0]  # this process took the partition over just now
    before = len(bus.records)
    await applier.apply_batch([rec(TOPICS.control, 0,
                                   ev.TimerFired(WF, LEASE, AT + HEARTBEAT_MS))])
    assert bus.records[before:] == []


async def test_a_timer_loop_that_stood_still_starts_every_lease_anew(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After a stand-still the leases that came due meanwhile do not fire: the heartbeats
    sent meanwhile are still unread."""
    from headwater.core.machine import step
    from services.coordinator import timers as timers_module

    monotonic = [1000.0]
    monkeypatch.setattr(timers_module.time, "monotonic", lambda: monotonic[0])
    state = step(None, ev.WorkflowSubmitted(WF, SPEC, {}, AT)).state
    state = step(state, ev.TaskStarted(WF, "f", None, 1, AT, "w")).state
    assert state is not None
    sent: list[ev.TimerFired] = []

    async def send(fired: ev.TimerFired) -> None:
        sent.append(fired)

    loop = timers_module.TimerLoop(TimerIndex(), lambda: [state], send, lambda: False)
    monkeypatch.setattr(timers_module, "now_ms", lambda: AT)
    await loop.tick()  # armed: the lease ends at AT + 30 s
    monotonic[0] += 45.0  # the process stood still for 45 s
    monkeypatch.setattr(timers_module, "now_ms", lambda: AT + 45_000)
    await loop.tick()
    assert [f.timer_id for f in sent] == []
    monotonic[0] += 0.05
    monkeypatch.setattr(timers_module, "now_ms", lambda: AT + 45_000 + HEARTBEAT_MS)
    await loop.tick()
    assert [f.timer_id for f in sent] == [LEASE]  # a full lease after the stand-still


async def test_a_long_scan_is_no_stand_still(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first tick's scan of a large table takes its time; the next tick must not take
    that for the process standing still (it would start every lease anew and scan the
    whole table again)."""
    from services.coordinator import timers as timers_module

    monotonic = [1000.0]
    monkeypatch.setattr(timers_module.time, "monotonic", lambda: monotonic[0])
    scans: list[int] = []

    def scan() -> list[Any]:
        scans.append(1)
        monotonic[0] += 5.0  # a table of many workflows
        return []

    async def send(fired: ev.TimerFired) -> None:
        raise AssertionError(fired)

    loop = timers_module.TimerLoop(TimerIndex(), scan, send, lambda: False)
    await loop.tick()
    monotonic[0] += 0.05
    await loop.tick()
    assert scans == [1]
