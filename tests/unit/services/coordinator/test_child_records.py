"""The coordinator's routing of child workflows (``records.encode_outputs`` with the
workflow's state): a child attempt's dispatch becomes the child's submission, its
cancellation or failure cancels the child, and a child reports to its parent's attempt.
The last test carries a parent and its children through those records in memory."""

from __future__ import annotations

from typing import Any

import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.core.kinds.workflow.rules import CHILD_CANCELLED, CHILD_FAILED
from headwater.core.machine import Step, step
from headwater.core.state import WorkflowState
from headwater.topics import Topics
from services.coordinator.inputs import decode_input
from services.coordinator.records import RECORD_MARGIN_BYTES, Outgoing, encode_outputs

TOPICS = Topics("unit-child")
AT = 1_700_000_000_000
MAX = 1_000_000
KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x", "input": "${input}"}],
       "output": "${nodes.x.output}"}
PARENT = {"name": "parent", "nodes": [
    {"id": "c", "kind": "workflow", "workflow": KID, "input": {"q": "${input.q}"},
     "timeout": 60, "retry": {"max_attempts": 3, "backoff_base": 1}},
    {"id": "after", "task": "t.after", "needs": ["c"], "input": "${nodes.c.output}"}]}


def _encode(result: Step) -> list[Outgoing]:
    return encode_outputs(TOPICS, result.events, MAX, result.state)


def _beside_history(out: list[Outgoing]) -> list[tuple[str, str, Any]]:
    """``(topic, key, decoded record)`` of every record that is not history."""
    return [(o.topic, o.key.decode(), codec.decode(o.value)) for o in out
            if o.topic != TOPICS.events]


def _parent(*inputs: ev.Input) -> tuple[WorkflowState | None, Step]:
    state = None
    result = step(None, ev.WorkflowSubmitted("p", PARENT, {"q": "zip"}, AT, "tenant-a"))
    for item in inputs:
        state = result.state
        result = step(state, item)
    return result.state, result


def test_a_child_attempts_dispatch_is_the_childs_submission_keyed_by_its_id() -> None:
    _, result = _parent()
    out = _encode(result)
    assert _beside_history(out) == [(TOPICS.submissions, "p:c:1", ev.ChildSubmitted(
        "p:c:1", "p", "c", None, 1, KID, {"q": "zip"}, AT, "tenant-a"))]
    assert not any(o.topic.startswith(TOPICS.tasks("")) for o in out)
    assert {o.workflow_id for o in out} == {"p"}  # the parent's intent carries them
    (sub,) = [o for o in out if o.topic == TOPICS.submissions]
    assert decode_input(TOPICS, sub.topic, sub.key, sub.value, None, AT) == codec.decode(
        sub.value)  # the child's coordinator takes it


def test_without_the_state_a_dispatch_goes_to_its_queue_as_before() -> None:
    _, result = _parent()
    out = encode_outputs(TOPICS, result.events, MAX)
    assert [o.topic for o in out if o.topic != TOPICS.events] == [TOPICS.tasks("cpu")]


def test_a_task_nodes_dispatch_and_cancel_still_go_to_its_queue_and_worker_control() -> None:
    _, result = _parent(ev.TaskSucceeded("p", "c", None, 1, AT + 5, "out"))
    assert [(t, k) for t, k, _ in _beside_history(_encode(result))] == [
        (TOPICS.tasks("cpu"), "p/after/1")]
    _, cancelled = _parent(ev.TaskSucceeded("p", "c", None, 1, AT + 5, "out"),
                           ev.CancelRequested("p", AT + 9, "stop"))
    assert [(t, k) for t, k, _ in _beside_history(_encode(cancelled))] == [
        (TOPICS.worker_control, "p")]


def test_cancelling_the_parent_cancels_its_running_child() -> None:
    _, result = _parent(ev.TaskStarted("p", "c", None, 1, AT + 5, "p:c:1"),
                        ev.CancelRequested("p", AT + 9, "user asked"))
    assert result.events[0].type == "TaskCancelled"
    assert _beside_history(_encode(result)) == [
        (TOPICS.control, "p:c:1", ev.CancelRequested("p:c:1", AT + 9, "parent p: user asked",
                                                     parent_id="p"))]


def test_an_attempt_that_timed_out_cancels_its_child() -> None:
    _, result = _parent(ev.TaskStarted("p", "c", None, 1, AT + 5, "p:c:1"),
                        ev.TimerFired("p", "deadline:c:1", AT + 60_000))
    assert "TimerScheduled" in [e.type for e in result.events]  # attempt 2 will follow
    ((topic, key, record),) = _beside_history(_encode(result))
    assert (topic, key) == (TOPICS.control, "p:c:1")
    assert isinstance(record, ev.CancelRequested) and "timed out" in record.reason
    assert record.parent_id == "p"  # only p's child takes it


def _child(*inputs: ev.Input) -> Step:
    result = step(None, ev.ChildSubmitted("p:c:2", "p", "c", None, 2, KID, {"q": "zip"}, AT,
                                          "tenant-a"))
    for item in inputs:
        result = step(result.state, item)
    return result


def test_an_accepted_child_reports_its_parents_attempt_started() -> None:
    routed = _beside_history(_encode(_child()))
    assert routed[0] == (TOPICS.reports, "p", ev.TaskStarted("p", "c", None, 2, AT,
                                                             worker="p:c:2"))
    assert [t for t, _, _ in routed[1:]] == [TOPICS.tasks("cpu")]  # its own task x


@pytest.mark.parametrize(("end", "report"), [
    (ev.TaskSucceeded("p:c:2", "x", None, 1, AT + 7, {"a": 1}),
     ev.TaskSucceeded("p", "c", None, 2, AT + 7, {"a": 1})),
    (ev.TaskFailed("p:c:2", "x", None, 1, AT + 7, "boom", "RuntimeError", False),
     ev.TaskFailed("p", "c", None, 2, AT + 7,
                   "child workflow p:c:2 failed: x failed after 1 attempt: RuntimeError: boom",
                   CHILD_FAILED, retryable=True)),
    (ev.CancelRequested("p:c:2", AT + 7, "parent p: user asked", parent_id="p"),
     ev.TaskFailed("p", "c", None, 2, AT + 7,
                   "child workflow p:c:2 was cancelled: parent p: user asked",
                   CHILD_CANCELLED, retryable=False)),
], ids=["succeeded", "failed", "cancelled"])
def test_a_child_that_ends_reports_to_its_parents_attempt(end: ev.Input,
                                                         report: ev.Report) -> None:
    routed = _beside_history(_encode(_child(end)))
    assert (TOPICS.reports, "p", report) in routed
    assert [r for t, _, r in routed if t == TOPICS.reports] == [report]


def test_a_workflow_of_its_own_reports_to_no_one() -> None:
    result = step(None, ev.WorkflowSubmitted("solo", KID, 1, AT, "t"))
    result = step(result.state, ev.TaskSucceeded("solo", "x", None, 1, AT + 1, 2))
    assert not [o for o in _encode(result) if o.topic == TOPICS.reports]


def test_a_child_submission_over_the_record_limit_is_refused() -> None:
    _, result = _parent(ev.TaskFailed("p", "c", None, 1, AT + 5, "no", CHILD_FAILED, True),
                        ev.TimerFired("p", "retry:c:2", AT + 10**6))
    out = _encode(result)
    (sub,) = [o for o in out if o.topic == TOPICS.submissions]
    history = max(len(o.key) + len(o.value) for o in out if o.topic == TOPICS.events)
    assert len(sub.key) + len(sub.value) > history  # the child's spec besides the input
    with pytest.raises(ValueError, match="exceeds the limit"):
        encode_outputs(TOPICS, result.events, history + RECORD_MARGIN_BYTES, result.state)


def _deliver(states: dict[str, WorkflowState | None], o: Outgoing,
             worker: Any) -> list[Outgoing]:
    """Apply one routed record as the coordinator or a worker would; what that sends."""
    if o.topic == TOPICS.tasks("cpu"):
        d = codec.decode(o.value)
        report = worker(d)
        return [] if report is None else [
            Outgoing(TOPICS.reports, d.workflow_id.encode(), codec.encode(report))]
    if o.topic not in TOPICS.inputs:
        return []
    sent_at = codec.decode(o.value).at_ms  # the test's clock: as the record says
    event = decode_input(TOPICS, o.topic, o.key, o.value, None, sent_at)
    result = step(states.get(event.workflow_id), event)
    states[event.workflow_id] = result.state
    return _encode(result)


def _drain(states: dict[str, WorkflowState | None], pending: list[Outgoing],
           worker: Any) -> None:
    """Deliver records until none is left; when all is quiet, the retry timers fire."""
    while pending:
        o = pending.pop(0)
        pending.extend(_deliver(states, o, worker))
        if not pending:
            pending.extend(Outgoing(TOPICS.control, s.workflow_id.encode(), codec.encode(
                ev.TimerFired(s.workflow_id, timer_id, t.fire_at_ms)))
                for s in states.values() if s is not None
                for timer_id, t in s.timers.items())


def test_a_parent_and_its_children_through_the_records_alone() -> None:
    """The child of attempts 1 and 2 fails, attempt 3's succeeds: three children, one
    output for the parent, and every child ended."""
    def worker(d: ev.TaskDispatched) -> ev.Report:
        if d.node == "x" and not d.workflow_id.endswith(":3"):
            return ev.TaskFailed(d.workflow_id, d.node, d.index, d.attempt, d.at_ms + 1,
                                 "no", "E", False)
        return ev.TaskSucceeded(d.workflow_id, d.node, d.index, d.attempt, d.at_ms + 1,
                                {"from": d.workflow_id})

    states: dict[str, WorkflowState | None] = {}
    _drain(states, [Outgoing(TOPICS.submissions, b"p", codec.encode(
        ev.WorkflowSubmitted("p", PARENT, {"q": "zip"}, AT, "tenant-a")))], worker)
    assert sorted(states) == ["p", "p:c:1", "p:c:2", "p:c:3"]
    status = {wid: s.status.value for wid, s in states.items() if s is not None}
    assert status == {"p": "succeeded", "p:c:1": "failed", "p:c:2": "failed",
                      "p:c:3": "succeeded"}
    parent = states["p"]
    assert parent is not None and parent.output == {"after": {"from": "p"}}
    assert parent.outputs["c"] == {"from": "p:c:3"}
    links = [s.parent for wid, s in sorted(states.items()) if s is not None and wid != "p"]
    assert links == [{"workflow_id": "p", "node": "c", "index": None, "attempt": i}
                     for i in (1, 2, 3)]


def test_cancelling_a_parent_cascades_to_its_child_and_grandchild() -> None:
    """The grandchild's task never ends; cancelling the parent ends all three, and the
    children's ends reported upwards change nothing."""
    middle = {"name": "middle", "nodes": [
        {"id": "g", "kind": "workflow", "workflow": KID, "input": "${input}"}]}
    top = {"name": "top", "nodes": [
        {"id": "c", "kind": "workflow", "workflow": middle, "input": "${input}"}]}
    states: dict[str, WorkflowState | None] = {}
    _drain(states, [Outgoing(TOPICS.submissions, b"p", codec.encode(
        ev.WorkflowSubmitted("p", top, 1, AT, "tenant-a")))], lambda d: None)
    assert {w: s.status.value for w, s in states.items() if s is not None} == {
        "p": "running", "p:c:1": "running", "p:c:1:g:1": "running"}
    assert states["p"] is not None and states["p"].tasks["c"].worker == "p:c:1"
    _drain(states, [Outgoing(TOPICS.control, b"p", codec.encode(
        ev.CancelRequested("p", AT + 50, "user asked")))], lambda d: None)
    assert {w: s.status.value for w, s in states.items() if s is not None} == {
        "p": "cancelled", "p:c:1": "cancelled", "p:c:1:g:1": "cancelled"}
    grandchild = states["p:c:1:g:1"]
    assert grandchild is not None and "parent p:c:1: parent p: user asked" in grandchild.error


def test_every_cancel_a_parent_sends_its_child_names_the_parent() -> None:
    """Cancels of the children of attempts that failed, timed out or were cancelled,
    at every depth, carry ``parent_id``: the workflow id of the parent sending it."""
    middle = {"name": "middle", "nodes": [
        {"id": "g", "kind": "workflow", "workflow": KID, "input": "${input}"}]}
    top = {"name": "top", "nodes": [
        {"id": "c", "kind": "workflow", "workflow": middle, "input": "${input}"}]}
    states: dict[str, WorkflowState | None] = {}
    _drain(states, [Outgoing(TOPICS.submissions, b"p", codec.encode(
        ev.WorkflowSubmitted("p", top, 1, AT, "tenant-a")))], lambda d: None)
    cancelled = _encode(step(states["p"], ev.CancelRequested("p", AT + 50, "user asked")))
    child = step(states["p:c:1"], ev.CancelRequested("p:c:1", AT + 50, "x", parent_id="p"))
    sent = [r for _, _, r in _beside_history([*cancelled, *_encode(child)])
            if isinstance(r, ev.CancelRequested)]
    assert [(r.workflow_id, r.parent_id) for r in sent] == [("p:c:1", "p"),
                                                             ("p:c:1:g:1", "p:c:1")]
    _, timed_out = _parent(ev.TaskStarted("p", "c", None, 1, AT + 5, "p:c:1"),
                           ev.TimerFired("p", "deadline:c:1", AT + 60_000))
    _, failed = _parent(ev.TaskFailed("p", "c", None, 1, AT + 5, "no", CHILD_FAILED, True))
    for result in (timed_out, failed):
        (record,) = [r for _, _, r in _beside_history(_encode(result))]
        assert isinstance(record, ev.CancelRequested) and record.parent_id == "p"
