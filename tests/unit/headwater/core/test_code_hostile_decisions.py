"""The ``code`` kind given what a hostile worker or a careless function gives it: a
decision forged on ``reports`` (a sleep past year 9999, steps numbered 1.0 or ``true``,
a sleep named with control characters), one signal and two waits for it, and a child
step whose id would outgrow the limit."""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import T0, WF, ok, run, submit

from headwater.core import events as ev
from headwater.core.instants import FIRST_MS, LAST_MS
from headwater.core.kinds.code.decision import DECISION_ERROR, decision_fault, numbering_fault
from headwater.core.machine.dispatch import MAX_CHILD_ID
from headwater.core.status import TaskStatus, WorkflowStatus
from services.projector.writer import plan

SPEC: dict[str, Any] = {
    "name": "code", "output": "${nodes.main.output}",
    "nodes": [{"id": "main", "kind": "code", "task": "wf.code", "input": "${input}",
               "retry": {"max_attempts": 100, "backoff_base": 1}}]}
CHILD = {"name": "kid", "nodes": [{"id": "main", "kind": "code", "task": "wf.kid"}]}


@pytest.mark.parametrize("until", [LAST_MS + 1, FIRST_MS - 1, 10 ** 17, 2 ** 64 - 1, True,
                                   1.5])
def test_a_sleep_until_an_instant_no_date_names_is_refused(until: Any) -> None:
    fault = decision_fault({"steps": [{"op": "sleep", "until_ms": until}]})
    assert fault is not None and "until_ms must be a whole number of ms" in fault, fault


@pytest.mark.parametrize("until", [FIRST_MS, 0, LAST_MS])
def test_a_sleep_until_any_date_is_taken_and_projected(until: int) -> None:
    decision = {"steps": [{"op": "sleep", "until_ms": until, "step": 0}]}
    assert decision_fault(decision) is None
    result = run([submit(SPEC, {}), ok("main", decision, index=0)])
    assert result.state.tasks["main[1]"].status is TaskStatus.RUNNING
    for e in result.history:  # the projector can write every row of it
        plan(e)


def test_a_forged_sleep_past_year_9999_fails_the_activation_attempt_only() -> None:
    forged = {"steps": [{"op": "sleep", "until_ms": 10 ** 17, "step": 0}]}
    result = run([submit(SPEC, {}), ok("main", forged, index=0)])
    failed = [e.body for e in result.history if isinstance(e.body, ev.TaskFailed)]
    assert failed and failed[0].error_type == DECISION_ERROR
    assert not [e for e in result.history if isinstance(e.body, ev.TaskSucceeded)]
    assert result.state.status is WorkflowStatus.RUNNING  # retried, as any refused decision


@pytest.mark.parametrize("number", [0.0, False, "0"])
def test_a_step_number_that_is_not_a_whole_number_is_refused(number: Any) -> None:
    fault = numbering_fault({"steps": [{"op": "sleep", "seconds": 1, "step": number}]}, 0)
    assert fault is not None and "says it is step" in fault


def test_a_sleep_named_with_control_characters_is_refused() -> None:
    fault = decision_fault({"steps": [{"op": "sleep", "seconds": 1, "name": "a\x00b"}]})
    assert fault is not None and "control characters" in fault


def test_one_signal_is_taken_by_one_wait_only() -> None:
    first = ok("main", {"steps": [{"op": "signal", "name": "go", "step": 0}]}, index=0)
    signal = ev.SignalSent(WF, "go", T0 + 200, None, "s-1", {"k": 1})
    second = ok("main", {"steps": [{"op": "signal", "name": "go", "step": 1}]}, index=2,
                at=T0 + 300)
    result = run([submit(SPEC, {}), first, signal, second])
    consumed = [e.body for e in result.history if isinstance(e.body, ev.SignalConsumed)]
    assert [c.index for c in consumed] == [1], consumed  # the second wait still waits
    assert result.state.tasks["main[3]"].status is TaskStatus.RUNNING
    assert result.state.signals == {}


def test_a_code_child_step_whose_id_would_be_too_long_fails_the_run() -> None:
    long_id = "w" * (MAX_CHILD_ID - 5)
    decision = {"steps": [{"op": "child", "name": "kid", "workflow": CHILD, "step": 0}]}
    result = run([submit(SPEC, {}, wf=long_id), ok("main", decision, index=0, wf=long_id)])
    assert not [e for e in result.history if isinstance(e.body, ev.TaskDispatched)
                and e.body.index == 1], "a child whose id cannot be submitted was dispatched"
    assert result.state.status is WorkflowStatus.FAILED
    assert "over the limit of 200" in result.state.error, result.state.error
