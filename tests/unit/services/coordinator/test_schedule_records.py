"""A schedule's records: each started fire time submits its run (``ChildSubmitted``, the
run's deterministic id, the definition named), a run cancelled by the next fire time
(``overlap: cancel_previous``) is cancelled, and the end of the schedule's workflow
cancels none of its runs."""

from __future__ import annotations

from headwater import codec
from headwater.core import events as ev
from headwater.core.machine import Step, step
from headwater.core.state import WorkflowState
from headwater.topics import Topics
from services.coordinator.records import encode_outputs

TOPICS = Topics("unit-schedule")
WF = "schedule:nightly:1"
T0 = 1_000_000
KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x", "input": "${input}"}]}


def _doc(overlap: str) -> dict[str, object]:
    return {"name": "schedule:nightly", "nodes": [
        {"id": "fire", "kind": "schedule", "cron": "* * * * * */2", "workflow": KID,
         "definition": "kid", "definition_version": 4, "input": {"q": 1},
         "overlap": overlap}]}


def _steps(*inputs: ev.Input) -> tuple[WorkflowState | None, list[Step]]:
    state, out = None, []
    for item in inputs:
        result = step(state, item)
        state = result.state
        out.append(result)
    return state, out


def _records(result: Step, topic: str) -> list[object]:
    return [codec.decode(o.value) for o in encode_outputs(TOPICS, result.events, 1_000_000,
                                                          result.state) if o.topic == topic]


def test_a_fire_time_submits_its_run_with_the_definition() -> None:
    _, (_, fire) = _steps(ev.WorkflowSubmitted(WF, _doc("skip"), None, T0),
                          ev.TimerFired(WF, "schedule:fire", T0 + 2000))
    (sub,) = _records(fire, TOPICS.submissions)
    assert isinstance(sub, ev.ChildSubmitted)
    assert (sub.workflow_id, sub.parent_id, sub.index, sub.attempt) == (
        f"{WF}:fire.0:1", WF, 0, 1)
    assert (sub.spec, sub.input, sub.definition, sub.definition_version) == (
        KID, {"q": 1}, "kid", 4)
    assert _records(fire, TOPICS.tasks("cpu")) == []  # no worker runs it


def test_cancel_previous_cancels_the_running_run() -> None:
    _, steps = _steps(ev.WorkflowSubmitted(WF, _doc("cancel_previous"), None, T0),
                      ev.TimerFired(WF, "schedule:fire", T0 + 2000),
                      ev.TimerFired(WF, "schedule:fire", T0 + 4000))
    cancels = _records(steps[-1], TOPICS.control)
    assert [(c.workflow_id, c.parent_id) for c in cancels
            if isinstance(c, ev.CancelRequested)] == [(f"{WF}:fire.0:1", WF)]


def test_deleting_the_schedule_leaves_its_runs_going() -> None:
    _, steps = _steps(ev.WorkflowSubmitted(WF, _doc("allow"), None, T0),
                      ev.TimerFired(WF, "schedule:fire", T0 + 2000),
                      ev.TimerFired(WF, "schedule:fire", T0 + 4000),
                      ev.CancelRequested(WF, T0 + 4500, "deleted"))
    assert [type(e.body).__name__ for e in steps[-1].events].count("TaskCancelled") == 2
    assert _records(steps[-1], TOPICS.control) == []
    assert _records(steps[-1], TOPICS.worker_control) == []
