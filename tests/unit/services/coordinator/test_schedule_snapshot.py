"""A schedule workflow in the table's split layout: after every step, the entries written
so far rebuild the state (its runs are task entries ``fire[k]``; its armed fire time,
last fire time and pause are node state, in the header)."""

from __future__ import annotations

from test_coordinator_snapshot_split import write

from headwater.core import events as ev
from headwater.core.machine import step
from headwater.core.state import WorkflowState
from services.coordinator.keys import DEFINITION
from services.coordinator.layout import load_split, task_keys
from services.coordinator.snapshot import dump_state

WF = "schedule:nightly:1"
T0 = 1_000_000
KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x"}]}
DOC = {"name": "schedule:nightly", "nodes": [
    {"id": "fire", "kind": "schedule", "cron": "* * * * * */2", "workflow": KID,
     "overlap": "allow", "catchup": "all", "misfire_grace": 1}]}
INPUTS: list[ev.Input] = [
    ev.WorkflowSubmitted(WF, DOC, None, T0),
    ev.TimerFired(WF, "schedule:fire", T0 + 2000),
    ev.TaskStarted(WF, "fire", 0, 1, T0 + 2050, f"{WF}:fire.0:1"),
    ev.TaskSucceeded(WF, "fire", 0, 1, T0 + 2100, {"big": "output"}),
    ev.SignalSent(WF, "pause", T0 + 2200, None, "p-1", None),
    ev.TimerFired(WF, "schedule:fire", T0 + 4000),
    ev.SignalSent(WF, "resume", T0 + 4100, None, "r-1", None),
    ev.TimerFired(WF, "schedule:fire", T0 + 12500),  # missed: caught up, each one
    ev.TaskFailed(WF, "fire", 2, 1, T0 + 12600, "boom", "ChildWorkflowFailed", True),
    ev.CancelRequested(WF, T0 + 13000, "deleted"),
]


def test_entries_rebuild_a_schedule_after_every_step() -> None:
    table: dict[str, bytes] = {}
    state: WorkflowState | None = None
    for item in INPUTS:
        result = step(state, item)
        state = result.state
        assert state is not None
        write(table, result)
        loaded = load_split(table[""], table[DEFINITION], table.get)
        assert dump_state(loaded) == dump_state(state)
        assert loaded == state
    assert state is not None and state.status.value == "cancelled"
    assert task_keys(state) == []  # every run ended (or was cancelled): no entry left
    assert sorted(table) == ["", DEFINITION]
    assert state.nodes["fire"].last_fire_ms == T0 + 12000
