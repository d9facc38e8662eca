"""Which inputs the core refuses, for the coordinator to dead-letter instead of stepping
(``headwater.core.machine.refusals.refusal``): a signal no wait can take, and one for a
workflow that has ended (recorded nowhere else: without the dead letter, a signal that
lost a race with the end vanished)."""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.machine import step
from headwater.core.machine.refusals import refusal
from headwater.core.state import WorkflowState

WF = "wf-ref"
SPEC = {"name": "r", "nodes": [{"id": "w", "kind": "wait", "signal": "go",
                                "fields": {"ok": "boolean"}}]}


def _running() -> WorkflowState:
    state = step(None, ev.WorkflowSubmitted(WF, SPEC, None, 1_000)).state
    assert state is not None
    return state


def test_a_valid_signal_for_a_running_workflow_is_stepped() -> None:
    assert refusal(_running(), ev.SignalSent(WF, "go", 2_000, None, "s", {"ok": True})) is None


def test_a_signal_no_wait_takes_is_refused_with_the_fault() -> None:
    why = refusal(_running(), ev.SignalSent(WF, "stop", 2_000, None, "s", {}))
    assert why is not None and "refused" in why and "'stop'" in why


def test_a_signal_for_an_ended_workflow_is_refused() -> None:
    state = step(_running(), ev.CancelRequested(WF, 1_500, "enough")).state
    assert state is not None and state.status.terminal
    why = refusal(state, ev.SignalSent(WF, "go", 2_000, None, "s", {"ok": True}))
    assert why == f"SignalSent for workflow {WF} refused: the workflow has already ended " \
                  "(cancelled)"


def test_a_signal_for_a_workflow_not_submitted_yet_waits() -> None:
    assert refusal(None, ev.SignalSent(WF, "go", 2_000, None, "s", {"ok": True})) is None
