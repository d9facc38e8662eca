"""``ctx.call`` children and a run's deadline through the coordinator, in memory: a
called run's ``CallerLinked`` reports the link to its parent (``CallLinked`` on
``reports``), the parent's deadline fails it and cancels its linked children
(``CancelRequested`` on ``control``), a link that reaches the ended parent is cancelled
at once, and the timer index arms the run's deadline until the run ends. Records are fed
back through ``BatchApplier`` as a broker would."""

from __future__ import annotations

from typing import Any

import pytest
from test_coordinator_child_conflict import Broker
from test_coordinator_redelivery import Table

from headwater import codec
from headwater.core import events as ev
from headwater.core.deadline import RUN_DEADLINE_TIMER
from headwater.topics import Topics
from services.coordinator import inputs as inputs_module
from services.coordinator.batch import BatchApplier
from services.coordinator.records import Outgoing, encode_outputs
from services.coordinator.timers import TimerIndex

TOPICS = Topics("unit-calls")
AT = 1_700_000_000_000
PARENT = {"name": "caller", "deadline": 5, "nodes": [{"id": "fetch", "task": "t.fetch"}]}
CHILD = {"name": "called", "nodes": [{"id": "x", "task": "t.x"}]}
LINK = {"workflow_id": "p", "node": "fetch", "index": None, "attempt": 1}


@pytest.fixture(autouse=True)
def _producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs keep the time their producer wrote."""
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


def _submitted(wid: str, doc: Any, at: int, parent: Any = None) -> Outgoing:
    return Outgoing(TOPICS.submissions, wid.encode(), codec.encode(
        ev.WorkflowSubmitted(wid, doc, {}, at, "t", parent=parent)))


async def _settle(applier: BatchApplier, broker: Broker, pending: list[Outgoing]) -> None:
    """Apply records until none is left (dispatches to workers are left unanswered)."""
    for _ in range(100):
        if not pending:
            return
        o = pending.pop(0)
        seen = len(broker.records)
        await applier.apply_batch([broker.consumed(o)])
        pending += [r for r in broker.records[seen:] if r.topic in TOPICS.inputs]
    raise AssertionError("the records never settled")


def _history(broker: Broker, wid: str) -> list[ev.HistoryEvent]:
    return [e for e in (codec.decode(r.value) for r in broker.records
                        if r.topic == TOPICS.events) if e.workflow_id == wid]


def _fired(wid: str, timer_id: str, at: int) -> Outgoing:
    return Outgoing(TOPICS.control, wid.encode(), codec.encode(ev.TimerFired(wid, timer_id, at)))


async def test_the_deadline_fails_the_caller_and_cancels_its_called_runs() -> None:
    broker, table, timers = Broker(), Table(), TimerIndex()
    applier = BatchApplier(TOPICS, broker, table, timers, 16 << 20)
    await _settle(applier, broker, [_submitted("p", PARENT, AT),
                                    _submitted("p:fetch:call.0", CHILD, AT + 10, LINK)])
    parent = table.get("p")
    assert parent is not None and parent.calls == ["p:fetch:call.0"]
    assert parent.deadline_at_ms == AT + 5000
    assert ("p", RUN_DEADLINE_TIMER, AT + 5000) in timers.pop_due(AT + 5000)
    assert [e.type for e in _history(broker, "p:fetch:call.0")][:2] == [
        "WorkflowAccepted", "CallerLinked"]
    links = [codec.decode(r.value) for r in broker.records if r.topic == TOPICS.reports]
    assert links == [ev.CallLinked("p", "p:fetch:call.0", "fetch", None, 1, AT + 10, "t")]

    await _settle(applier, broker, [_fired("p", RUN_DEADLINE_TIMER, AT + 4999)])
    assert table.get("p").status.value == "running"  # early: nothing
    await _settle(applier, broker, [_fired("p", RUN_DEADLINE_TIMER, AT + 5000)])
    parent = table.get("p")
    assert parent is not None and parent.status.value == "failed"
    assert parent.error.startswith("DeadlineExceeded: the run's deadline")
    stops = [codec.decode(r.value) for r in broker.records if r.topic == TOPICS.worker_control]
    assert [(s.workflow_id, s.node) for s in stops] == [("p", "fetch"),
                                                       ("p:fetch:call.0", "x")]
    child = table.get("p:fetch:call.0")
    assert child is not None and child.status.value == "cancelled"
    assert child.error.startswith("parent p failed: DeadlineExceeded")
    timers.arm(parent)
    assert ("p", RUN_DEADLINE_TIMER, AT + 5000) not in timers.pop_due(AT + 10**9)

    # A run the caller's task submits after its end is cancelled as soon as it links.
    await _settle(applier, broker, [_submitted("p:fetch:call.1", CHILD, AT + 6000, LINK)])
    late = table.get("p:fetch:call.1")
    assert late is not None and late.status.value == "cancelled"
    assert [e.type for e in _history(broker, "p")][-1] == "WorkflowFailed"  # p unchanged


def test_a_called_runs_link_and_the_parents_end_are_routed() -> None:
    from headwater.core.machine import step

    child = step(None, ev.WorkflowSubmitted("c", CHILD, {}, AT, "t", parent=LINK))
    out = encode_outputs(TOPICS, child.events, 1 << 20, child.state)
    reports = [(o.topic, o.key, codec.decode(o.value)) for o in out if o.topic == TOPICS.reports]
    assert reports == [(TOPICS.reports, b"p", ev.CallLinked("p", "c", "fetch", None, 1, AT,
                                                            "t"))]
    parent = step(None, ev.WorkflowSubmitted("p", PARENT, {}, AT, "t"))
    parent = step(parent.state, ev.CallLinked("p", "c", "fetch", None, 1, AT + 1, "t"))
    ended = step(parent.state, ev.CancelRequested("p", AT + 2, "stop"))
    out = encode_outputs(TOPICS, ended.events, 1 << 20, ended.state)
    cancels = [(o.key, codec.decode(o.value)) for o in out if o.topic == TOPICS.control]
    assert cancels == [(b"c", ev.CancelRequested("c", AT + 2, "parent p cancelled: stop",
                                                 parent_id="p"))]
    assert all(o.workflow_id == "p" for o in out)  # the parent's intent carries them
