"""One clock, the coordinator's: every input is stamped with the coordinator's time as it
is taken into a batch (``inputs.decode_input``), so leases, deadlines and retry timers
do not move with the clock of the worker or submitter that produced it."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest
from test_coordinator_redelivery import TOPICS, WF, Bus, Table, rec

from headwater import codec
from headwater.core import events as ev
from headwater.core.state import task_timers
from headwater.errors import DecodeError
from services.coordinator import inputs
from services.coordinator.batch import BatchApplier
from services.coordinator.inputs import decode_input
from services.coordinator.timers import TimerIndex

NOW = 1_800_000_000_000
"""The coordinator's time, ms since the epoch."""
SKEWS = [300_000, -300_000]
"""How far the producers' clocks are off, ms."""
INPUTS: list[tuple[str, Any]] = [
    (TOPICS.submissions, ev.WorkflowSubmitted(WF, {"name": "s", "nodes": []}, None, 0)),
    (TOPICS.control, ev.CancelRequested(WF, 0, "stop")),
    (TOPICS.reports, ev.TaskStarted(WF, "a", None, 1, 0, "w")),
    (TOPICS.reports, ev.TaskHeartbeated(WF, "a", None, 1, 0)),
    (TOPICS.reports, ev.TaskProgressed(WF, "a", None, 1, 0, 0.5, "half")),
    (TOPICS.reports, ev.TaskCheckpointed(WF, "a", None, 1, 0, {"done": 1})),
    (TOPICS.reports, ev.TaskOutputStreamed(WF, "a", None, 1, 0, 0, "chunk")),
    (TOPICS.reports, ev.TaskSucceeded(WF, "a", None, 1, 0, {"o": 1})),
    (TOPICS.reports, ev.TaskFailed(WF, "a", None, 1, 0, "boom", "E", True)),
]


def at(record: Any, at_ms: int) -> Any:
    return dataclasses.replace(record, at_ms=at_ms)


@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize(("topic", "record"), INPUTS,
                         ids=[type(r).__name__ for _, r in INPUTS])
def test_every_input_carries_the_coordinators_time(topic: str, record: Any,
                                                   skew: int) -> None:
    value = codec.encode(at(record, NOW + skew))
    got = decode_input(TOPICS, topic, WF.encode(), value, None, received_ms=NOW)
    assert got == at(record, NOW)


def test_a_json_submission_carries_the_coordinators_time() -> None:
    doc = {"workflow_id": WF, "spec": {"name": "s", "nodes": []}, "at_ms": NOW - 300_000}
    got = decode_input(TOPICS, TOPICS.submissions, WF.encode(), orjson.dumps(doc),
                       [("content-type", b"application/json")], received_ms=NOW)
    assert got.at_ms == NOW


@pytest.mark.parametrize("fired_at", [NOW + 500, NOW - 500, 253_402_300_799_999])
def test_a_timer_firing_is_stamped_with_the_coordinators_time_too(fired_at: int) -> None:
    """``control`` is open to any producer: a firing dated in the future would end a
    deadline early or date a retry past year 9999 (found by trying). A firing that
    arrives early changes nothing (``machine.timers``)."""
    value = codec.encode(ev.TimerFired(WF, "lease:a:1", fired_at))
    got = decode_input(TOPICS, TOPICS.control, WF.encode(), value, None, received_ms=NOW)
    assert got == ev.TimerFired(WF, "lease:a:1", NOW)


def test_without_a_time_given_the_clock_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "now_ms", lambda: NOW + 7)
    value = codec.encode(ev.TaskHeartbeated(WF, "a", None, 1, NOW + 300_000))
    assert decode_input(TOPICS, TOPICS.reports, WF.encode(), value, None).at_ms == NOW + 7


def test_an_impossible_time_is_still_refused() -> None:
    value = codec.encode(ev.TaskHeartbeated(WF, "a", None, 1, -1))
    with pytest.raises(DecodeError, match="at_ms"):
        decode_input(TOPICS, TOPICS.reports, WF.encode(), value, None, received_ms=NOW)


SPEC = {"name": "timed", "nodes": [{
    "id": "t", "task": "t.t", "timeout": 20, "heartbeat_timeout": 3,
    "retry": {"max_attempts": 2, "backoff_base": 2, "backoff_max": 2, "jitter": 0}}]}


class Coordinator:
    """A batch applier over the in-memory table, its clock set by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = NOW
        self.bus, self.table, self.index = Bus(), Table(), TimerIndex()
        self.applier = BatchApplier(TOPICS, self.bus, self.table, self.index, 16 << 20)
        self._offsets: dict[str, int] = {}
        monkeypatch.setattr(inputs, "now_ms", lambda: self.now)

    async def take(self, after_ms: int, topic: str, record: Any) -> None:
        """Apply ``record`` as one batch ``after_ms`` after the last."""
        self.now += after_ms
        offset = self._offsets.get(topic, -1) + 1
        self._offsets[topic] = offset
        await self.applier.apply_batch([rec(topic, offset, record)])

    def timers(self) -> list[tuple[str, int]]:
        """The task's deadline and lease and the workflow's retry timers, as the state
        implies them: ``(timer id, ms after NOW)``."""
        state = self.table.get(WF)
        assert state is not None
        return [(timer_id, fire_at - NOW) for timer_id, fire_at in
                [*task_timers(state.tasks["t"], "t"),
                 *((i, t.fire_at_ms) for i, t in state.timers.items())]]

    def due_by(self, after_ms: int) -> list[tuple[str, int]]:
        """The armed timers due ``after_ms`` after NOW (removed from the index)."""
        return [(timer_id, fire_at - NOW)
                for _, timer_id, fire_at in self.index.pop_due(NOW + after_ms)]

    def history(self) -> list[tuple[str, int]]:
        """``(type, ms after NOW)`` of each recorded event but heartbeats (which the
        history may leave out)."""
        return [(e.type, e.body.at_ms - NOW) for e in self.bus.events()
                if e.type != "TaskHeartbeated"]


@pytest.mark.parametrize("skew", SKEWS)
async def test_leases_deadlines_and_retries_run_on_the_coordinators_clock(
        monkeypatch: pytest.MonkeyPatch, skew: int) -> None:
    c = Coordinator(monkeypatch)
    await c.take(0, TOPICS.submissions, ev.WorkflowSubmitted(WF, SPEC, None, NOW + skew))
    assert c.timers() == [("deadline:t:1", 20_000)]
    await c.take(1_000, TOPICS.reports, ev.TaskStarted(WF, "t", None, 1, NOW + skew, "w"))
    assert c.timers() == [("deadline:t:1", 20_000), ("lease:t:1", 4_000)]
    await c.take(2_000, TOPICS.reports, ev.TaskHeartbeated(WF, "t", None, 1, NOW + skew))
    # Renewed from the heartbeat's arrival: the lease ends 3 s after it, not before.
    assert c.due_by(5_999) == []
    assert c.due_by(6_000) == [("lease:t:1", 6_000)]
    await c.take(2_000, TOPICS.reports,
                 ev.TaskFailed(WF, "t", None, 1, NOW + skew, "boom", "E", True))
    assert c.timers() == [("retry:t:2", 5_000 + 2_000)]
    assert c.history() == [
        ("WorkflowAccepted", 0), ("TaskDispatched", 0), ("TaskStarted", 1_000),
        ("TaskFailed", 5_000), ("TimerScheduled", 5_000)]
