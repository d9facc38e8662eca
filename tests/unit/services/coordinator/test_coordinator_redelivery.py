"""Inputs delivered again after a crash (``Coordinator.handle_batch`` with an in-memory bus
and table): whatever was applied and written before is skipped, whatever was not is
applied again to the same snapshot; no seq is ever published with two bodies."""

from __future__ import annotations

import copy
from collections.abc import Awaitable
from typing import Any

import pytest

from headwater import codec
from headwater import events as ev
from headwater.snapshot import dump_header, load_split
from headwater.state import WorkflowState
from headwater.topics import Topics
from services.coordinator.handler import Coordinator, DeadLetter, InputRecord, Outgoing
from services.coordinator.timers import TimerIndex

TOPICS = Topics("unit")
WF = "wf-1"
AT = 1_700_000_000_000
SPEC = {"name": "flaky", "retry": {"max_attempts": 3, "backoff_base": 0.2},
        "nodes": [{"id": "f", "task": "t.f"}]}


class Killed(BaseException):
    """The process died at this point."""


class Bus:
    def __init__(self) -> None:
        self.events: list[ev.HistoryEvent] = []
        self.kill_after_publish = False

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        self.events += [codec.decode(r.value) for r in records if r.topic == TOPICS.events]
        if self.kill_after_publish:
            raise Killed


class Table:
    """Durable copies, written only by ``put``."""

    def __init__(self) -> None:
        self.durable: dict[str, WorkflowState] = {}

    def get(self, workflow_id: str) -> WorkflowState | None:
        return self.load(workflow_id)

    def load(self, workflow_id: str) -> WorkflowState | None:
        state = self.durable.get(workflow_id)
        return copy.deepcopy(state) if state is not None else None

    def put(self, state: WorkflowState) -> list[Awaitable[Any]]:
        self.durable[state.workflow_id] = copy.deepcopy(state)
        state.dirty.clear()
        return []

    def forget(self, workflow_id: str) -> None:
        pass


def rec(topic: str, offset: int, value: Any) -> InputRecord:
    return InputRecord(topic, 0, offset, WF.encode(), codec.encode(value), [])


INPUTS = [
    rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, SPEC, {}, AT)),
    rec(TOPICS.reports, 0, ev.TaskStarted(WF, "f", None, 1, AT + 10, "w-1")),
    rec(TOPICS.reports, 1, ev.TaskFailed(WF, "f", None, 1, AT + 20, "boom", "E")),
    rec(TOPICS.control, 0, ev.TimerFired(WF, "retry:f:2", AT + 300)),
    rec(TOPICS.reports, 2, ev.TaskStarted(WF, "f", None, 2, AT + 400, "w-1")),
    rec(TOPICS.reports, 3, ev.TaskHeartbeated(WF, "f", None, 2, AT + 500)),
]


def conflicts(events: list[ev.HistoryEvent]) -> dict[int, set[str]]:
    by_seq: dict[int, list[ev.HistoryEvent]] = {}
    for e in events:
        by_seq.setdefault(e.seq, []).append(e)
    return {s: {e.type for e in es} for s, es in by_seq.items() if any(e != es[0] for e in es)}


@pytest.mark.parametrize("committed", range(len(INPUTS)))
async def test_redelivered_inputs_never_publish_a_seq_twice_with_other_bodies(
        committed: int) -> None:
    """Each input is a batch, written to the table; the last one is killed after
    publishing. Offsets were committed up to input ``committed``: everything after it
    comes again."""
    bus, table = Bus(), Table()
    first = Coordinator(TOPICS, bus, table, TimerIndex(), 16 << 20)
    for r in INPUTS[:-1]:
        await first.handle_batch([r])
    bus.kill_after_publish = True
    with pytest.raises(Killed):
        await first.handle_batch([INPUTS[-1]])
    bus.kill_after_publish = False
    again = Coordinator(TOPICS, bus, table, TimerIndex(), 16 << 20)
    await again.handle_batch(INPUTS[committed:])
    assert conflicts(bus.events) == {}
    assert again.replayed == len(INPUTS) - 1 - committed
    state = table.durable[WF]
    assert [e.seq for e in bus.events if e.seq > state.seq] == []
    assert state.seq == max(e.seq for e in bus.events)
    assert state.applied == {TOPICS.submissions: 0, TOPICS.reports: 3, TOPICS.control: 0}


def test_the_header_keeps_the_applied_offsets() -> None:
    bus, table = Bus(), Table()
    import asyncio

    asyncio.run(Coordinator(TOPICS, bus, table, TimerIndex(), 16 << 20).handle_batch(
        INPUTS[:2]))
    state = table.durable[WF]
    from headwater.snapshot import dump_definition, dump_task

    loaded = load_split(dump_header(state), dump_definition(state),
                        lambda key: dump_task(state, key))
    assert loaded.applied == {TOPICS.submissions: 0, TOPICS.reports: 0}
