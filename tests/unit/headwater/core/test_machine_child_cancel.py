"""State-machine tables: a parent's cancel (``CancelRequested.parent_id`` set) ends only
that parent's child. A workflow that holds the id on its own, or as another parent's
child, records nothing; a user's cancel (no ``parent_id``) ends any workflow, as before.
A cancel that overtook the child's submission is checked when ``start`` applies it."""

from __future__ import annotations

from machine_harness import T0, check_history, snapshot

from headwater.core import events as ev
from headwater.core.machine import start, step
from headwater.core.state import WorkflowState

KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x", "input": "${input}"}]}
CID = "p:c:1"


def _child(parent: str = "p") -> ev.ChildSubmitted:
    return ev.ChildSubmitted(CID, parent, "c", None, 1, KID, {"q": 1}, T0, "tenant-a")


def _standalone() -> ev.WorkflowSubmitted:
    return ev.WorkflowSubmitted(CID, KID, {"q": 1}, T0, "tenant-a")


def _cancel(parent_id: str | None, at: int = T0 + 50) -> ev.CancelRequested:
    return ev.CancelRequested(CID, at, f"parent {parent_id}: timed out", parent_id=parent_id)


def _running(submitted: ev.WorkflowSubmitted | ev.ChildSubmitted) -> WorkflowState:
    state = step(None, submitted).state
    assert state is not None and state.status.value == "running"
    return state


def test_a_parents_cancel_of_a_workflow_of_its_own_records_nothing() -> None:
    state = _running(_standalone())
    before = snapshot(state)
    out = step(state, _cancel("p"))
    assert out.events == [] and not out.deferred
    assert out.state is not None and out.state.status.value == "running"
    assert snapshot(out.state) == before


def test_a_parents_cancel_of_another_parents_child_records_nothing() -> None:
    state = _running(_child(parent="q"))
    before = snapshot(state)
    out = step(state, _cancel("p"))
    assert out.events == []
    assert snapshot(out.state) == before


def test_the_parents_cancel_of_its_own_child_ends_it() -> None:
    submitted = step(None, _child())
    out = step(submitted.state, _cancel("p"))
    assert [e.type for e in out.events] == ["TaskCancelled", "NodeFinished", "WorkflowCancelled"]
    assert out.state is not None and out.state.status.value == "cancelled"
    assert out.events[-1].body.reason == "parent p: timed out"
    check_history([*submitted.events, *out.events], out.state)


def test_a_users_cancel_without_parent_id_ends_any_workflow() -> None:
    for submitted in (_standalone(), _child()):
        out = step(_running(submitted), _cancel(None))
        assert out.state is not None and out.state.status.value == "cancelled"


def test_a_parents_cancel_for_an_unknown_workflow_waits_for_it() -> None:
    out = step(None, _cancel("p"))
    assert out.deferred and out.events == []


def test_a_waiting_parents_cancel_ends_its_child_linked_first() -> None:
    out = start(_child(), [_cancel("p", at=T0 - 5)])
    assert [e.type for e in out.events] == ["WorkflowAccepted", "ParentLinked",
                                            "NodeFinished", "WorkflowCancelled"]
    assert out.state is not None and out.state.status.value == "cancelled"
    check_history(out.events, out.state)


def test_a_waiting_parents_cancel_leaves_a_workflow_of_its_own_running() -> None:
    out = start(_standalone(), [_cancel("p", at=T0 - 5)])
    assert [e.type for e in out.events] == ["WorkflowAccepted", "TaskDispatched"]
    assert out.state is not None and out.state.status.value == "running"
    assert [e.type for e in step(None, _standalone()).events] == [e.type for e in out.events]
    check_history(out.events, out.state)


def test_a_waiting_cancel_of_another_parent_leaves_the_child_running() -> None:
    out = start(_child(parent="q"), [_cancel("p", at=T0 - 5)])
    assert [e.type for e in out.events] == ["WorkflowAccepted", "ParentLinked",
                                            "TaskDispatched"]
    assert out.state is not None and out.state.status.value == "running"
    check_history(out.events, out.state)


def test_an_ended_workflow_records_nothing_for_any_cancel() -> None:
    state = step(_running(_child()), _cancel("p")).state
    for parent_id in ("p", "q", None):
        assert step(state, _cancel(parent_id, at=T0 + 90)).events == []
