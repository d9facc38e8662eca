"""``ctx.call`` children: the link each history records (the child's ``CallerLinked``,
the parent's ``CallLinked``), the cancels the parent's end sends them, and the cancel of
a link that reaches a parent that has ended (``decide``)."""

from __future__ import annotations

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    check_case,
    check_history,
    fail,
    map_node,
    run,
    spec,
    started,
    submit,
    task,
)

from headwater.core import events as ev
from headwater.core.calls import MAX_CALLS, caller_link, link_fault
from headwater.core.deadline import RUN_DEADLINE_TIMER
from headwater.core.machine import Context, decide, step
from headwater.core.machine.calls import cancels_at_end, late_cancel

CALLER = spec(task("fetch"), deadline=60)
CHILD_ID = f"{WF}:fetch:call.0"
LINK = {"workflow_id": WF, "node": "fetch", "index": None, "attempt": 1}


TENANT = "tenant-a"
"""The tenant ``machine_harness.submit`` gives."""


def linked(child: str = CHILD_ID, at: int = T0 + 70, tenant: str | None = TENANT,
           ) -> ev.CallLinked:
    return ev.CallLinked(WF, child, "fetch", None, 1, at, tenant)


def called(parent: dict[str, object] | None = LINK) -> ev.WorkflowSubmitted:
    return ev.WorkflowSubmitted(CHILD_ID, spec(task("x")), None, T0 + 60, TENANT,
                                parent=parent)


@pytest.mark.parametrize(("value", "want"), [
    (LINK, LINK), ({**LINK, "index": 3, "attempt": 2}, {**LINK, "index": 3, "attempt": 2}),
    ({**LINK, "extra": 1}, LINK),
])
def test_a_callers_link_is_read_from_the_submission(value: object, want: object) -> None:
    assert caller_link(value) == want
    assert link_fault(value) is None


@pytest.mark.parametrize("value", [
    "wf-1", {**LINK, "workflow_id": ""}, {**LINK, "node": 3}, {**LINK, "attempt": 0},
    {**LINK, "attempt": True}, {**LINK, "index": -1}, {**LINK, "index": "1"},
    {"workflow_id": WF, "node": "fetch"}, {**LINK, "index": 2**70}, {**LINK, "attempt": 2**31},
    {**LINK, "node": "a\u0000"}, {**LINK, "workflow_id": "w" * 201},
])
def test_a_malformed_link_is_none_and_its_fault_says_what_a_link_is(value: object) -> None:
    assert caller_link(value) is None
    assert "parent must be" in (link_fault(value) or "")


def test_a_called_run_records_its_caller_after_its_acceptance() -> None:
    result = step(None, called())
    assert [e.type for e in result.events][:3] == ["WorkflowAccepted", "CallerLinked",
                                                   "TaskDispatched"]
    assert result.events[1].body == ev.CallerLinked(CHILD_ID, WF, "fetch", None, 1, T0 + 60)
    assert result.state is not None and result.state.caller == LINK
    assert result.state.parent is None  # not a workflow node's child: it reports nothing
    check_history(result.events, result.state)


def test_a_run_of_its_own_records_no_caller() -> None:
    result = step(None, called(parent=None))
    assert "CallerLinked" not in [e.type for e in result.events]


CASES = [
    Case("a running parent records the link", CALLER, given=[started("fetch")],
         when=linked(), events=[("CallLinked", {"child_id": CHILD_ID, "node": "fetch"})],
         state={"calls": [CHILD_ID], "status": "running"}),
    Case("a link it holds already changes nothing", CALLER,
         given=[started("fetch"), linked()], when=linked(at=T0 + 90), events=[],
         state={"calls": [CHILD_ID]}),
    Case("a link from another tenant's run changes nothing", CALLER,
         given=[started("fetch")], when=linked(tenant="someone-else"), events=[],
         state={"calls": []}),
    Case("a link naming a node that does not call (a wait) changes nothing",
         spec(task("fetch"), {"id": "w", "kind": "wait", "signal": "go"}),
         given=[started("fetch")],
         when=ev.CallLinked(WF, CHILD_ID, "w", None, 1, T0 + 70, TENANT), events=[],
         state={"calls": []}),
    Case("a link naming no node of the run changes nothing", CALLER,
         given=[started("fetch")],
         when=ev.CallLinked(WF, CHILD_ID, "nope", None, 1, T0 + 70, TENANT), events=[]),
    Case("a link with an index to a task node changes nothing", CALLER,
         given=[started("fetch")],
         when=ev.CallLinked(WF, CHILD_ID, "fetch", 3, 1, T0 + 70, TENANT), events=[]),
    Case("a link from an attempt the task has not reached changes nothing", CALLER,
         given=[started("fetch")],
         when=ev.CallLinked(WF, CHILD_ID, "fetch", None, 2, T0 + 70, TENANT), events=[]),
    Case("a link from a map's item is recorded",
         spec(map_node("m", "${input.xs}")), input={"xs": [1, 2]},
         given=[started("m", index=1)],
         when=ev.CallLinked(WF, CHILD_ID, "m", 1, 1, T0 + 70, TENANT),
         events=[("CallLinked", {"node": "m", "index": 1})]),
    Case("a link to a parent that has ended records nothing", CALLER,
         given=[started("fetch"), fail("fetch", at=T0 + 80)], when=linked(), events=[],
         state={"status": "failed", "calls": []}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_call_link_table(case: Case) -> None:
    check_case(case)


def test_the_parents_end_cancels_every_linked_child_naming_the_parent() -> None:
    result = run([submit(CALLER), started("fetch"), linked(),
                  linked(f"{WF}:fetch:call.1", T0 + 71),
                  ev.TimerFired(WF, RUN_DEADLINE_TIMER, T0 + 60_000)])
    assert result.state is not None and result.state.status.value == "failed"
    end = result.history[-1].body
    cancels = cancels_at_end(result.state, end)
    assert [(c.workflow_id, c.parent_id, c.at_ms) for c in cancels] == [
        (CHILD_ID, WF, T0 + 60_000), (f"{WF}:fetch:call.1", WF, T0 + 60_000)]
    assert all(c.reason.startswith(f"parent {WF} failed: DeadlineExceeded") for c in cancels)
    assert cancels_at_end(result.state, result.history[-2].body) == []  # no terminal event
    check_history(result.history, result.state)


def test_a_cancelled_parent_cancels_them_too_with_its_reason() -> None:
    result = run([submit(CALLER), started("fetch"), linked(),
                  ev.CancelRequested(WF, T0 + 100, "operator")])
    assert result.state is not None
    (cancel,) = cancels_at_end(result.state, result.history[-1].body)
    assert cancel.reason == f"parent {WF} cancelled: operator"


def test_a_link_reaching_a_parent_that_ended_is_cancelled_at_once() -> None:
    ended = run([submit(CALLER), started("fetch"), fail("fetch", at=T0 + 80)]).state
    assert ended is not None and ended.status.terminal
    decision = decide(ended, linked(at=T0 + 90), Context())
    assert decision.step is not None and decision.step.events == []
    assert decision.cancels == (ev.CancelRequested(
        CHILD_ID, T0 + 90, decision.cancels[0].reason, parent_id=WF),)
    assert decision.cancels[0].reason.startswith(f"parent {WF} failed: fetch failed")
    assert late_cancel(ended, linked(tenant="other")) is None  # not its tenant's child
    assert late_cancel(None, linked()) is None  # an unknown parent: nothing
    running = run([submit(CALLER), started("fetch")]).state
    assert late_cancel(running, linked()) is None


def test_a_parents_cancel_ends_its_called_child_and_a_strangers_does_not() -> None:
    child = step(None, called()).state
    assert child is not None
    stranger = step(child, ev.CancelRequested(CHILD_ID, T0 + 70, "x", parent_id="other"))
    assert stranger.events == []
    result = step(child, ev.CancelRequested(CHILD_ID, T0 + 70, f"parent {WF} failed",
                                            parent_id=WF))
    assert [e.type for e in result.events][-1] == "WorkflowCancelled"
    assert result.state is not None and result.state.error == f"parent {WF} failed"


def test_links_past_the_bound_are_not_recorded() -> None:
    state = run([submit(CALLER), started("fetch")]).state
    assert state is not None
    state.calls = [f"c{i}" for i in range(MAX_CALLS)]
    assert step(state, linked()).events == []


def test_a_link_reaching_a_purged_parent_is_cancelled_at_once() -> None:
    from headwater.core.retention import dump_marker

    ended = run([submit(CALLER), started("fetch"), fail("fetch", at=T0 + 80)]).state
    assert ended is not None
    decision = decide(None, linked(at=T0 + 90), Context(marker=dump_marker(ended, T0 + 85)))
    assert decision.step is None and decision.refused is None
    assert decision.cancels == (ev.CancelRequested(
        CHILD_ID, T0 + 90, f"parent {WF} failed and was purged", parent_id=WF),)
    other = decide(None, ev.TaskStarted(WF, "fetch", None, 1, T0 + 90),
                   Context(marker=dump_marker(ended, T0 + 85)))
    assert other.cancels == ()
