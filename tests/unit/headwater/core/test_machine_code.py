"""The ``code`` kind in the pure core: what an activation's decision does, and what is
refused (decisions driven by hand here; the SDK's side is tests/unit/headwater/workflows)."""

from __future__ import annotations

from typing import Any

from machine_harness import T0, WF, fired, ok, run, submit

from headwater.core import events as ev
from headwater.core.kinds.code.decision import DECISION_ERROR, decision_fault
from headwater.core.signals import signal_fault
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus

SPEC: dict[str, Any] = {
    "name": "code", "output": "${nodes.main.output}",
    "nodes": [{"id": "main", "kind": "code", "task": "wf.code", "input": "${input}",
               "retry": {"max_attempts": 100, "backoff_base": 1}, "max_events": 50}]}
TASK = {"op": "task", "name": "t.a", "queue": "cpu", "input": {"x": 1}}


def _names(events: list[ev.HistoryEvent]) -> list[str]:
    return [type(e.body).__name__ for e in events]


def test_activation_zero_is_dispatched_with_its_number_only() -> None:
    result = run([submit(SPEC, {"q": 1})])
    dispatch = result.history[-1].body
    assert isinstance(dispatch, ev.TaskDispatched)
    assert (dispatch.node, dispatch.index, dispatch.task, dispatch.input) == (
        "main", 0, "wf.code", {"activation": 0})


def test_a_decision_dispatches_its_steps_and_a_result_activates_again() -> None:
    result = run([submit(SPEC, {}), ok("main", {"steps": [TASK, TASK]}, index=0)])
    steps = [e.body for e in result.history if isinstance(e.body, ev.TaskDispatched)][-2:]
    assert [(s.index, s.task, s.input) for s in steps] == [(1, "t.a", {"x": 1}),
                                                           (3, "t.a", {"x": 1})]
    after = run([ok("main", 5, index=1, at=T0 + 200)], result.state)
    assert _names(after.history) == ["TaskSucceeded", "TaskDispatched"]
    assert after.history[-1].body.index == 2  # activation 1, given the one result
    code = after.state.nodes["main"].code
    assert code is not None and code["acts"][1][1] == 1 and code["done"] == [0]
    late = run([ok("main", 6, index=3, at=T0 + 300)], after.state)
    assert _names(late.history) == ["TaskSucceeded"]  # waits for activation 1 to decide


def test_a_malformed_decision_fails_the_attempt_and_the_activation_is_retried() -> None:
    result = run([submit(SPEC, {}), ok("main", {"steps": [{"op": "teleport"}]}, index=0)])
    failed = [e.body for e in result.history if isinstance(e.body, ev.TaskFailed)]
    assert failed and failed[0].error_type == DECISION_ERROR
    assert "op one of task, child, sleep, signal, patch" in failed[0].error
    assert isinstance(result.history[-1].body, ev.TimerScheduled)
    assert result.state.status is WorkflowStatus.RUNNING


def test_decision_faults_name_what_is_wrong() -> None:
    assert decision_fault({"finish": 1, "fail": {}}) == (
        "a decision has at most one of finish, fail and continue_as_new")
    assert "queue 'no spaces' must match" in (decision_fault(
        {"steps": [{**TASK, "queue": "no spaces"}]}) or "")
    assert "retry" in (decision_fault(
        {"steps": [{**TASK, "retry": {"max_attempts": 0}}]}) or "")
    assert decision_fault({"steps": [TASK], "finish": None}) is None


def test_a_function_that_waits_on_nothing_fails_by_name() -> None:
    result = run([submit(SPEC, {}), ok("main", {"steps": []}, index=0)])
    assert result.state.status is WorkflowStatus.FAILED
    assert result.state.error.startswith("WorkflowBlocked")


def test_a_sleep_is_a_task_of_the_coordinators_own_that_its_timer_ends() -> None:
    result = run([submit(SPEC, {}), ok("main", {"steps": [
        {"op": "sleep", "seconds": 30}]}, index=0, at=T0 + 100)])
    task = result.state.tasks["main[1]"]
    assert (task.status, task.worker) == (TaskStatus.RUNNING, "headwater.sleep")
    woke = run([fired("code:main[1]", T0 + 30_100)], result.state)
    assert woke.state.tasks["main[1]"].status is TaskStatus.SUCCEEDED
    assert isinstance(woke.history[-1].body, ev.TaskDispatched)  # activation 1


def test_a_signal_before_its_wait_is_kept_and_taken_when_the_wait_begins() -> None:
    early = ev.SignalSent(WF, "go", T0 + 50, None, "s-1", {"ok": True})
    result = run([submit(SPEC, {}), early,
                  ok("main", {"steps": [{"op": "signal", "name": "go"}]}, index=0)])
    assert "SignalConsumed" in _names(result.history)
    code = result.state.nodes["main"].code
    assert code is not None and code["steps"][0]["result"] == {"value": {"ok": True}}


def test_signals_of_a_code_workflow_take_any_name_but_no_index() -> None:
    state = run([submit(SPEC, {})]).state
    assert signal_fault(state, ev.SignalSent(WF, "anything", T0, None, "", {})) is None
    assert signal_fault(state, ev.SignalSent(WF, "go", T0, 2, "", {})) == (
        "signal 'go' of a code workflow takes no index")
    assert signal_fault(state, ev.SignalSent(WF, "go", T0, None, "", [1])) == (
        "the fields of signal 'go' must be an object")


def test_the_function_returning_finishes_the_node_and_the_run() -> None:
    result = run([submit(SPEC, {}), ok("main", {"steps": [], "finish": {"a": 1}}, index=0)])
    assert result.state.nodes["main"].status is NodeStatus.SUCCEEDED
    assert (result.state.status, result.state.output) == (WorkflowStatus.SUCCEEDED, {"a": 1})


def test_continue_as_new_starts_a_generation_with_the_new_input() -> None:
    result = run([submit(SPEC, {"n": 0}), ok("main", {"continue_as_new": {"n": 5}}, index=0)])
    restarted = [e.body for e in result.history if isinstance(e.body, ev.WorkflowRestarted)]
    assert restarted and restarted[0].continued and restarted[0].input == {"n": 5}
    assert (result.state.generation, result.state.continued, result.state.input) == (
        2, 1, {"n": 5})
    again = result.history[-1].body
    assert isinstance(again, ev.TaskDispatched) and again.index == 0 and again.attempt == 2
