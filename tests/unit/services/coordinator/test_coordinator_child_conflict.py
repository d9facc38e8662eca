"""A child id already held by another run (``headwater.core.machine.conflicts``): the
parent's ``ChildSubmitted`` is dead-lettered and, in the same intent, the parent's attempt
is reported failed (``TaskFailed``, ``ChildWorkflowConflict``, retryable), so the retry
submits the next child id. The run that holds the id is never changed: the parent's
cancels name the parent and it ignores them. The last tests carry a parent, its children
and the squatter through ``BatchApplier`` in memory, records fed back as a broker would."""

from __future__ import annotations

from typing import Any

import pytest
from test_coordinator_redelivery import Table

from headwater import codec
from headwater.core import events as ev
from headwater.core.idempotency import conflict
from headwater.core.machine import Context, Decision, decide, step
from headwater.core.machine.conflicts import CHILD_CONFLICT, conflict_report
from headwater.core.state import WorkflowState
from headwater.topics import Topics
from services.coordinator import inputs as inputs_module
from services.coordinator.batch import BatchApplier
from services.coordinator.records import DeadLetter, InputRecord, Outgoing
from services.coordinator.timers import TimerIndex

TOPICS = Topics("unit-conflict")
AT = 1_700_000_000_000
KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x", "input": "${input}"}],
       "output": "${nodes.x.output}"}
PARENT = {"name": "parent", "nodes": [
    {"id": "c", "kind": "workflow", "workflow": KID, "input": {"q": "${input.q}"},
     "retry": {"max_attempts": 2, "backoff_base": 0.5}}], "output": "${nodes.c.output}"}
SQUAT = {"name": "squat", "nodes": [{"id": "w", "kind": "wait", "signal": "s"}]}


@pytest.fixture(autouse=True)
def _producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs keep the time their producer wrote: the timers fire when they are due."""
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


def _child(attempt: int = 1, parent: str = "p") -> ev.ChildSubmitted:
    return ev.ChildSubmitted(f"p:c:{attempt}", parent, "c", None, attempt, KID, {"q": 1},
                             AT + 5, "t")


def _squatter() -> WorkflowState:
    state = step(None, ev.WorkflowSubmitted("p:c:1", SQUAT, {}, AT, "t")).state
    assert state is not None
    return state


def test_a_child_id_held_by_a_workflow_of_its_own_fails_the_parents_attempt() -> None:
    state = _squatter()
    why = conflict(state, _child())
    assert why is not None
    report = conflict_report(state, _child(), why)
    assert report == ev.TaskFailed("p", "c", None, 1, AT + 5,
                                   f"child workflow p:c:1 was not started: {why}",
                                   CHILD_CONFLICT, retryable=True)
    assert decide(state, _child(), Context()) == Decision(refused=why, report=report)


def test_a_child_id_held_by_another_parents_child_fails_the_attempt_too() -> None:
    state = step(None, _child(parent="q")).state
    report = conflict_report(state, _child(), "held")
    assert report is not None and report.workflow_id == "p"
    assert report.error_type == CHILD_CONFLICT and report.retryable


def test_the_attempts_own_child_and_other_inputs_report_nothing() -> None:
    own = step(None, _child()).state
    other_body = ev.ChildSubmitted("p:c:1", "p", "c", None, 1, KID, {"q": 2}, AT, "t")
    assert conflict(own, other_body) is not None  # refused, but that child runs and reports
    assert conflict_report(own, other_body, "different body") is None
    assert conflict_report(None, _child(), "never refused") is None
    plain = ev.WorkflowSubmitted("p:c:1", KID, {"q": 2}, AT, "t")
    assert conflict_report(_squatter(), plain, "a conflict of its own") is None
    refused = decide(_squatter(), plain, Context())
    assert refused.refused is not None and refused.report is None and refused.step is None


class Broker:
    """Every record the coordinator published, and the dead letters; input topics keep
    offsets so that records can be fed back as consumed."""

    def __init__(self) -> None:
        self.records: list[Outgoing] = []
        self.dead: list[DeadLetter] = []
        self.offsets: dict[str, int] = {}

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        self.records += records
        self.dead += dead

    def consumed(self, o: Outgoing) -> InputRecord:
        offset = self.offsets.get(o.topic, -1) + 1
        self.offsets[o.topic] = offset
        return InputRecord(o.topic, 0, offset, o.key, o.value, [])

    def history(self, wid: str) -> list[ev.HistoryEvent]:
        return [e for e in (codec.decode(r.value) for r in self.records
                            if r.topic == TOPICS.events) if e.workflow_id == wid]


def _worker(o: Outgoing) -> Outgoing:
    d = codec.decode(o.value)
    done = ev.TaskSucceeded(d.workflow_id, d.node, d.index, d.attempt, d.at_ms + 1,
                            {"from": d.workflow_id})
    return Outgoing(TOPICS.reports, d.workflow_id.encode(), codec.encode(done))


async def _run(applier: BatchApplier, broker: Broker, table: Table,
               pending: list[Outgoing]) -> None:
    """Apply records until none is left, the worker answering every task; when all
    is quiet, the timers of the given workflows fire."""
    for _ in range(200):
        if not pending:
            pending = [Outgoing(TOPICS.control, wid.encode(), codec.encode(
                ev.TimerFired(wid, timer_id, t.fire_at_ms)))
                for wid in ("p", "p:c:1", "p:c:2") if (s := table.get(wid)) is not None
                for timer_id, t in s.timers.items() if not s.status.terminal]
            if not pending:
                return
        o = pending.pop(0)
        seen = len(broker.records)
        if o.topic == TOPICS.tasks("cpu"):
            pending.append(_worker(o))
            continue
        await applier.apply_batch([broker.consumed(o)])
        pending += [r for r in broker.records[seen:] if r.topic in TOPICS.inputs
                    or r.topic == TOPICS.tasks("cpu")]
    raise AssertionError("the records never settled")


def _submitted(wid: str, doc: Any) -> Outgoing:
    return Outgoing(TOPICS.submissions, wid.encode(),
                    codec.encode(ev.WorkflowSubmitted(wid, doc, {"q": 1}, AT, "t")))


async def _parent_beside_a_squatter() -> tuple[BatchApplier, Broker, Table, list[Any]]:
    broker, table = Broker(), Table()
    applier = BatchApplier(TOPICS, broker, table, TimerIndex(), 16 << 20)
    await _run(applier, broker, table, [_submitted("p:c:1", SQUAT)])
    squat = broker.history("p:c:1")
    assert [e.type for e in squat] == ["WorkflowAccepted", "WaitStarted"]
    return applier, broker, table, squat


async def test_the_parent_retries_with_the_next_child_and_the_squatter_is_untouched() -> None:
    applier, broker, table, squat = await _parent_beside_a_squatter()
    await _run(applier, broker, table, [_submitted("p", PARENT)])
    (dead,) = broker.dead
    assert dead.record.topic == TOPICS.submissions and "a workflow of its own" in dead.reason
    parent = table.get("p")
    assert parent is not None and parent.status.value == "succeeded"
    assert parent.output == {"from": "p:c:2"}
    failed = [e.body for e in broker.history("p") if isinstance(e.body, ev.TaskFailed)]
    assert [(f.attempt, f.error_type, f.retryable) for f in failed] == [
        (1, CHILD_CONFLICT, True)]
    assert "p:c:1 was not started" in failed[0].error
    cancels = [codec.decode(r.value) for r in broker.records if r.topic == TOPICS.control
               and r.key == b"p:c:1"]
    assert cancels and all(c.parent_id == "p" for c in cancels)  # sent, and ignored
    assert broker.history("p:c:1") == squat
    squatter = table.get("p:c:1")
    assert squatter is not None and squatter.status.value == "running"
    child = table.get("p:c:2")
    assert child is not None and child.status.value == "succeeded"


async def test_a_cancelled_parent_cancels_its_child_and_not_the_squatter() -> None:
    applier, broker, table, squat = await _parent_beside_a_squatter()
    blocked = {**PARENT, "nodes": [{**PARENT["nodes"][0], "workflow": SQUAT}]}
    await _run(applier, broker, table, [_submitted("p", blocked)])
    child = table.get("p:c:2")
    assert child is not None and child.status.value == "running"
    await _run(applier, broker, table, [Outgoing(TOPICS.control, b"p", codec.encode(
        ev.CancelRequested("p", AT + 10_000, "user asked")))])
    assert {w: s.status.value for w in ("p", "p:c:1", "p:c:2")
            if (s := table.get(w)) is not None} == {
        "p": "cancelled", "p:c:1": "running", "p:c:2": "cancelled"}
    assert broker.history("p:c:1") == squat
