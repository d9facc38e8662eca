"""``headwater.core.evolve.evolve``: what each history event does, and what it refuses."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.state import IllegalTransition, WorkflowState, new_state
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus

WF = "wf"
SPEC = {"name": "s", "nodes": [
    {"id": "a", "task": "t"},
    {"id": "m", "task": "t", "kind": "map", "over": "${nodes.a.output}", "needs": ["a"]},
]}
ACCEPTED = ev.WorkflowAccepted(WF, 10, SPEC, {"in": 1}, "ten")


def fold(bodies: Sequence[ev.Body]) -> WorkflowState:
    state: WorkflowState | None = None
    for seq, body in enumerate(bodies, start=1):
        state = evolve(state, ev.HistoryEvent(WF, seq, body))
    assert state is not None
    return state


def test_new_state_from_accepted() -> None:
    state = new_state(ACCEPTED)
    assert (state.name, state.tenant, state.input) == ("s", "ten", {"in": 1})
    assert (state.created_at_ms, state.updated_at_ms, state.seq) == (10, 10, 0)
    assert set(state.nodes) == {"a", "m"} and state.open_nodes == 2
    assert state.status is WorkflowStatus.RUNNING and state.spec_error == ""
    assert state.spec.node("m").kind.value == "map"


def test_new_state_with_an_invalid_spec_records_the_error() -> None:
    state = new_state(ev.WorkflowAccepted(WF, 10, {"name": 5, "nodes": "x"}, None))
    assert "name: required" in state.spec_error and "nodes: required" in state.spec_error
    assert state.nodes == {} and state.open_nodes == 0 and state.name == ""


def test_evolve_through_a_map() -> None:
    state = fold([
        ACCEPTED,
        ev.TaskDispatched(WF, "a", None, 1, "t", "cpu", None, 11),
        ev.TaskStarted(WF, "a", None, 1, 12, "w1"),
        ev.TaskSucceeded(WF, "a", None, 1, 13, ["x", "y"]),
        ev.NodeFinished(WF, "a", "succeeded", 13),
        ev.MapExpanded(WF, "m", 2, 13),
        ev.TaskDispatched(WF, "m", 0, 1, "t", "cpu", "x", 13),
        ev.TaskDispatched(WF, "m", 1, 1, "t", "cpu", "y", 13),
        ev.TaskFailed(WF, "m", 1, 1, 14, "boom"),
        ev.TimerScheduled(WF, "retry:m[1]:2", 99, "m", 1, 2, 14),
    ])
    m = state.nodes["m"]
    assert (m.status, m.total, m.next_index, m.running, m.done) == (NodeStatus.RUNNING, 2, 2, 2, 0)
    assert state.tasks["m[1]"].status is TaskStatus.RETRY_WAIT
    assert state.tasks["a"].worker == "w1" and state.tasks["a"].progress == 1.0
    assert state.timers["retry:m[1]:2"].fire_at_ms == 99
    assert (state.seq, state.updated_at_ms, state.outputs) == (10, 14, {"a": ["x", "y"]})


TERMINAL: list[tuple[ev.Body, WorkflowStatus, str]] = [
    (ev.WorkflowSucceeded(WF, 20, {"o": 1}), WorkflowStatus.SUCCEEDED, ""),
    (ev.WorkflowFailed(WF, 20, "why"), WorkflowStatus.FAILED, "why"),
    (ev.WorkflowCancelled(WF, 20, "stop"), WorkflowStatus.CANCELLED, "stop"),
]


@pytest.mark.parametrize(("body", "status", "error"), TERMINAL, ids=[s.value for _, s, _ in
                                                                      TERMINAL])
def test_terminal_events_close_everything(body: ev.Body, status: WorkflowStatus,
                                          error: str) -> None:
    state = fold([
        ACCEPTED,
        ev.TaskDispatched(WF, "a", None, 1, "t", "cpu", None, 11),
        ev.TaskFailed(WF, "a", None, 1, 12),
        ev.TimerScheduled(WF, "retry:a:2", 50, "a", None, 2, 12),
        body,
    ])
    assert state.status is status and state.status.terminal and state.error == error
    assert state.timers == {} and state.open_nodes == 0
    assert all(n.status is NodeStatus.CANCELLED for n in state.nodes.values())
    assert state.tasks["a"].status is TaskStatus.CANCELLED


ILLEGAL: list[tuple[str, list[ev.HistoryEvent]]] = [
    ("history not starting with WorkflowAccepted",
     [ev.HistoryEvent(WF, 1, ev.WorkflowFailed(WF, 1))]),
    ("first event not at seq 1", [ev.HistoryEvent(WF, 2, ACCEPTED)]),
    ("a gap in seq", [ev.HistoryEvent(WF, 1, ACCEPTED),
                      ev.HistoryEvent(WF, 3, ev.WorkflowFailed(WF, 1))]),
    ("a repeated seq", [ev.HistoryEvent(WF, 1, ACCEPTED), ev.HistoryEvent(WF, 1, ACCEPTED)]),
    ("a report for an unknown task", [
        ev.HistoryEvent(WF, 1, ACCEPTED),
        ev.HistoryEvent(WF, 2, ev.TaskSucceeded(WF, "a", None, 1, 2))]),
    ("an event after the terminal one", [
        ev.HistoryEvent(WF, 1, ACCEPTED), ev.HistoryEvent(WF, 2, ev.WorkflowCancelled(WF, 2)),
        ev.HistoryEvent(WF, 3, ev.WorkflowFailed(WF, 3))]),
    ("a node finished twice", [
        ev.HistoryEvent(WF, 1, ACCEPTED),
        ev.HistoryEvent(WF, 2, ev.NodeFinished(WF, "a", "failed", 2)),
        ev.HistoryEvent(WF, 3, ev.NodeFinished(WF, "a", "succeeded", 3))]),
    ("a second WorkflowAccepted", [ev.HistoryEvent(WF, 1, ACCEPTED),
                                   ev.HistoryEvent(WF, 2, ACCEPTED)]),
]


@pytest.mark.parametrize("events", [e for _, e in ILLEGAL], ids=[n for n, _ in ILLEGAL])
def test_illegal_histories_raise(events: list[ev.HistoryEvent]) -> None:
    state: WorkflowState | None = None
    with pytest.raises(IllegalTransition):
        for event in events:
            state = evolve(state, event)


def test_event_for_an_unknown_node_is_an_illegal_transition() -> None:
    with pytest.raises(IllegalTransition):
        fold([ACCEPTED, ev.TaskDispatched(WF, "ghost", None, 1, "t", "cpu", None, 11)])


def test_status_enums_know_which_values_are_terminal() -> None:
    assert [s for s in WorkflowStatus if not s.terminal] == [WorkflowStatus.RUNNING]
    assert {s for s in NodeStatus if not s.terminal} == {NodeStatus.PENDING, NodeStatus.RUNNING}
    assert {s for s in TaskStatus if not s.terminal} == {
        TaskStatus.DISPATCHED, TaskStatus.RUNNING, TaskStatus.RETRY_WAIT, TaskStatus.HELD}
