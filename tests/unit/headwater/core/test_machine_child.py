"""State-machine tables: child workflows (``kind: workflow``), one child per attempt.

A child's coordinator reports to its parent's attempt as a worker would (started when
accepted, succeeded with its output, failed or cancelled when it ends); these tables
feed those reports to the parent, and the child's own side (``ChildSubmitted``).
"""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    cancel,
    check_case,
    check_history,
    fired,
    has,
    ok,
    run,
    spec,
    task,
)

from headwater.core import events as ev
from headwater.core.idempotency import conflict
from headwater.core.ids import child_id
from headwater.core.kinds.workflow.rules import CHILD_CANCELLED, CHILD_FAILED
from headwater.core.machine import fail, start, step
from headwater.core.machine.dispatch import CHILD_ID_TOO_LONG, MAX_CHILD_ID

KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x", "input": "${input}"}],
       "output": "${nodes.x.output}"}
RETRY3 = {"max_attempts": 3, "backoff_base": 1, "multiplier": 2}


def child(node_id: str, *needs: str, **extra: Any) -> dict[str, Any]:
    """A workflow node running ``KID`` with ``{"q": ${input.q}}``."""
    return {"id": node_id, "kind": "workflow", "workflow": KID, "needs": list(needs),
            "input": {"q": "${input.q}"}, **extra}


ONE = spec(child("c", retry=RETRY3), task("after", "c", input="${nodes.c.output}"))
TIMED = spec(child("c", timeout=5, retry={"max_attempts": 2, "backoff_base": 1}))
MAPPED = spec(task("src"),
              child("m", "src", over="${nodes.src.output}", max_concurrency=2,
                    input={"q": "${item}", "i": "${index}"}),
              task("fan", "m", input="${nodes.m.output}"))
INPUT = {"q": "zip"}


def kid_started(node: str, *, attempt: int = 1, index: int | None = None,
                at: int = T0 + 20) -> ev.TaskStarted:
    """The child's coordinator: the child was accepted and linked."""
    return ev.TaskStarted(WF, node, index, attempt, at, child_id(WF, node, index, attempt))


def kid_ok(node: str, output: Any, *, attempt: int = 1, index: int | None = None,
           at: int = T0 + 100) -> ev.TaskSucceeded:
    return ev.TaskSucceeded(WF, node, index, attempt, at, output)


def kid_failed(node: str, *, attempt: int = 1, index: int | None = None,
               at: int = T0 + 100) -> ev.TaskFailed:
    return ev.TaskFailed(WF, node, index, attempt, at, "child workflow failed: x broke",
                         CHILD_FAILED, retryable=True)


def kid_cancelled(node: str, *, attempt: int = 1, at: int = T0 + 100) -> ev.TaskFailed:
    return ev.TaskFailed(WF, node, None, attempt, at, "child workflow was cancelled",
                         CHILD_CANCELLED, retryable=False)


def submitted_child(wid: str = "p:c:1", *, attempt: int = 1,
                    at: int = T0) -> ev.ChildSubmitted:
    """The ``ChildSubmitted`` the parent ``p``'s coordinator sends for node ``c``."""
    return ev.ChildSubmitted(wid, "p", "c", None, attempt, KID, {"q": "zip"}, at, "tenant-a")


PARENT_CASES = [
    Case("a workflow node starts: attempt 1 is dispatched as task 'workflow', without lease",
         ONE, input=INPUT, submit=False, given=[],
         when=ev.WorkflowSubmitted(WF, ONE, INPUT, T0, "tenant-a"),
         events=[("WorkflowAccepted", {}),
                 ("TaskDispatched", {"node": "c", "index": None, "attempt": 1,
                                     "task": "workflow", "queue": "cpu",
                                     "input": {"q": "zip"}, "heartbeat_timeout_s": None,
                                     "timeout_s": None})],
         state={"nodes.c.status": "running", "tasks.c.status": "dispatched"}),
    Case("the child was accepted: the attempt runs, its worker is the child's id",
         ONE, input=INPUT, given=[], when=kid_started("c"),
         events=[("TaskStarted", {"worker": "wf-1:c:1"})],
         state={"tasks.c.status": "running", "tasks.c.worker": "wf-1:c:1",
                "tasks.c.heartbeat_ms": None}),
    Case("the child succeeded: its output is the node's, and the dependents see it",
         ONE, input=INPUT, given=[kid_started("c")], when=kid_ok("c", {"answer": 42}),
         events=[("TaskSucceeded", {"output": {"answer": 42}}),
                 ("NodeFinished", {"node": "c", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "after", "input": {"answer": 42}})],
         state={"outputs.c": {"answer": 42}, "nodes.c.results": None}),
    Case("the child failed: the attempt is retried, the next one a new child",
         ONE, input=INPUT, given=[kid_started("c")], when=kid_failed("c"),
         events=[("TaskFailed", {"error_type": CHILD_FAILED, "attempt": 1}),
                 ("TimerScheduled", {"timer_id": "retry:c:2", "attempt": 2,
                                     "fire_at_ms": T0 + 1100})],
         state={"tasks.c.status": "retry_wait", "nodes.c.status": "running"}),
    Case("the child was cancelled: not retryable, the node fails at once",
         ONE, input=INPUT, given=[kid_started("c")], when=kid_cancelled("c"),
         events=[("TaskFailed", {"error_type": CHILD_CANCELLED, "retryable": False}),
                 ("NodeFinished", {"node": "c", "status": "failed",
                                   "error": has("c failed after 1 attempt",
                                                CHILD_CANCELLED)}),
                 ("NodeFinished", {"node": "after", "status": "upstream_failed"}),
                 ("WorkflowFailed", {})]),
    Case("the node's timeout passes: the attempt fails and a new child will be started",
         TIMED, input=INPUT, given=[kid_started("c")], when=fired("deadline:c:1", T0 + 5000),
         events=[("TimerFired", {}),
                 ("TaskFailed", {"attempt": 1, "error_type": "TimeoutError"}),
                 ("TimerScheduled", {"timer_id": "retry:c:2"})]),
    Case("the late end of a timed-out child changes nothing but the audit trail",
         TIMED, input=INPUT, given=[kid_started("c"), fired("deadline:c:1", T0 + 5000)],
         when=kid_ok("c", "late", at=T0 + 5100),
         events=[("ReportDiscarded", {"report": "TaskSucceeded",
                                      "reason": has("timed out")})]),
    Case("cancelling the parent cancels the running child's attempt",
         ONE, input=INPUT, given=[kid_started("c")], when=cancel(),
         events=[("TaskCancelled", {"node": "c", "attempt": 1, "reason": "user asked"}),
                 ("NodeFinished", {"node": "c", "status": "cancelled"}),
                 ("NodeFinished", {"node": "after", "status": "cancelled"}),
                 ("WorkflowCancelled", {})],
         state={"tasks.c.status": "cancelled"}),
    Case("cancelling the parent while the next child waits to be started",
         ONE, input=INPUT, given=[kid_failed("c")], when=cancel(),
         events=[("TaskCancelled", {"node": "c", "attempt": 1}),
                 ("NodeFinished", {"node": "c", "status": "cancelled"}),
                 ("NodeFinished", {"node": "after", "status": "cancelled"}),
                 ("WorkflowCancelled", {})],
         state={"timers": {}}),
]


@pytest.mark.parametrize("case", PARENT_CASES, ids=str)
def test_child_attempt_table(case: Case) -> None:
    check_case(case)


def _three_attempts() -> list[ev.Input]:
    return [ev.WorkflowSubmitted(WF, ONE, INPUT, T0, "tenant-a"),
            kid_started("c"), kid_failed("c", at=T0 + 100),
            fired("retry:c:2", T0 + 1100), kid_started("c", attempt=2, at=T0 + 1120),
            kid_failed("c", attempt=2, at=T0 + 1200),
            fired("retry:c:3", T0 + 3200), kid_started("c", attempt=3, at=T0 + 3220),
            kid_ok("c", {"answer": 3}, attempt=3, at=T0 + 3300),
            ok("after", "done", at=T0 + 3400)]


def test_a_child_failing_twice_succeeds_on_the_parents_third_attempt() -> None:
    result = run(_three_attempts())
    check_history(result.history, result.state)
    children = [d for d in result.bodies(ev.TaskDispatched) if d.node == "c"]
    assert [d.attempt for d in children] == [1, 2, 3]
    ids = [child_id(d.workflow_id, d.node, d.index, d.attempt) for d in children]
    assert ids == ["wf-1:c:1", "wf-1:c:2", "wf-1:c:3"]  # one child per attempt
    assert all(d.input == {"q": "zip"} for d in children)
    assert [s.worker for s in result.bodies(ev.TaskStarted)] == ids
    assert [e.body.node for e in result.history
            if isinstance(e.body, ev.TaskSucceeded)] == ["c", "after"]  # one output
    assert result.state is not None and result.state.outputs["c"] == {"answer": 3}
    (after,) = [d for d in result.bodies(ev.TaskDispatched) if d.node == "after"]
    assert after.input == {"answer": 3}
    assert isinstance(result.history[-1].body, ev.WorkflowSucceeded)


def test_a_redelivered_child_end_after_the_retry_is_only_recorded_as_discarded() -> None:
    inputs = _three_attempts()
    result = run([*inputs[:4], kid_failed("c", at=T0 + 1150)])  # attempt 1's end again
    (discarded,) = result.per_step[-1]
    assert isinstance(discarded.body, ev.ReportDiscarded)
    assert "superseded by attempt 2" in discarded.body.reason
    assert result.state is not None and result.state.tasks["c"].attempt == 2


def test_a_map_over_a_child_workflow_keeps_input_order_and_max_concurrency() -> None:
    items = ["a", "b", "c", "d", "e"]
    inputs: list[ev.Input] = [ev.WorkflowSubmitted(WF, MAPPED, None, T0, "tenant-a"),
                              ok("src", items)]
    for i in (1, 0, 3, 2, 4):  # children end out of order
        inputs.append(kid_ok("m", items[i].upper(), index=i))
    inputs.append(ok("fan", "done"))
    state = None
    history: list[ev.HistoryEvent] = []
    for item in inputs:
        out = step(state, item)
        state, history = out.state, history + out.events
        assert state is not None
        live = [k for k, t in state.tasks.items() if k.startswith("m[") and t.status.live]
        assert len(live) == state.nodes["m"].running <= 2
    check_history(history, state)
    children = [d for e in history if isinstance(d := e.body, ev.TaskDispatched)
                and d.node == "m"]
    assert [(d.index, d.task, d.input) for d in children] == [
        (i, "workflow", {"q": items[i], "i": i}) for i in range(5)]
    (fan,) = [e.body for e in history
              if isinstance(e.body, ev.TaskDispatched) and e.body.node == "fan"]
    assert fan.input == ["A", "B", "C", "D", "E"]
    assert isinstance(history[-1].body, ev.WorkflowSucceeded)


def test_a_child_whose_id_would_be_too_long_fails_its_node() -> None:
    wid = "p" * (MAX_CHILD_ID - len(":c:1") + 1)
    result = run([ev.WorkflowSubmitted(wid, ONE, INPUT, T0, "tenant-a")])
    check_history(result.history, result.state)
    assert result.types == ["WorkflowAccepted", "NodeFinished", "NodeFinished",
                            "WorkflowFailed"]
    (failed, _) = result.bodies(ev.NodeFinished)
    assert failed.status == "failed" and "over the limit of 200" in failed.error
    ok_id = "p" * (MAX_CHILD_ID - len(":c:1"))
    fits = run([ev.WorkflowSubmitted(ok_id, ONE, INPUT, T0, "tenant-a")])
    assert fits.types == ["WorkflowAccepted", "TaskDispatched"]


def test_a_too_long_child_id_in_a_continue_on_error_map_fails_only_its_item() -> None:
    doc = spec(child("m", over="${input.xs}", continue_on_error=True, input="${item}"))
    wid = "p" * (MAX_CHILD_ID - len(":m.0:1"))  # item 0 fits, item 10 does not
    result = run([ev.WorkflowSubmitted(wid, doc, {"xs": list(range(11))}, T0, "t")])
    (failed,) = result.bodies(ev.TaskFailed)
    assert (failed.index, failed.error_type, failed.retryable) == (10, CHILD_ID_TOO_LONG, False)
    assert len(result.bodies(ev.TaskDispatched)) == 10


# -- the child's side: ChildSubmitted --------------------------------------------------------

CHILD_SIDE = [
    Case("a ChildSubmitted is accepted, then linked to its parent's attempt, then runs",
         KID, submit=False, given=[], when=submitted_child(),
         events=[("WorkflowAccepted", {"workflow_id": "p:c:1", "spec": KID,
                                       "input": {"q": "zip"}, "tenant": "tenant-a"}),
                 ("ParentLinked", {"parent_id": "p", "node": "c", "index": None,
                                   "attempt": 1}),
                 ("TaskDispatched", {"node": "x", "input": {"q": "zip"}})],
         state={"parent": {"workflow_id": "p", "node": "c", "index": None, "attempt": 1}}),
    Case("a resubmitted ChildSubmitted changes nothing",
         KID, submit=False, given=[submitted_child()], when=submitted_child(at=T0 + 50),
         events=[]),
]


@pytest.mark.parametrize("case", CHILD_SIDE, ids=str)
def test_child_submission_table(case: Case) -> None:
    check_case(case)


def test_a_resubmitted_child_is_no_conflict_but_another_parent_or_body_is() -> None:
    state = step(None, submitted_child()).state
    assert conflict(state, submitted_child(at=T0 + 50)) is None
    other_attempt = ev.ChildSubmitted("p:c:1", "p", "c", None, 2, KID, {"q": "zip"}, T0,
                                      "tenant-a")
    why = conflict(state, other_attempt)
    assert why is not None and "attempt 1 of node c of p" in why
    plain = ev.WorkflowSubmitted("p:c:1", KID, {"q": "zip"}, T0, "tenant-a")
    assert conflict(state, plain) is None  # the same run, by its body
    squatter = step(None, plain).state
    why = conflict(squatter, submitted_child())
    assert why is not None and "a workflow of its own" in why
    other_body = ev.ChildSubmitted("p:c:1", "p", "c", None, 1, KID, {"q": "other"}, T0,
                                   "tenant-a")
    assert "different submission" in (conflict(state, other_body) or "")


def test_a_cancel_that_overtook_the_child_ends_it_before_it_starts() -> None:
    out = start(submitted_child(), [ev.CancelRequested("p:c:1", T0 - 5, "parent ended")])
    assert [e.type for e in out.events] == ["WorkflowAccepted", "ParentLinked",
                                            "NodeFinished", "WorkflowCancelled"]
    assert not any(isinstance(e.body, ev.TaskDispatched) for e in out.events)
    check_history(out.events, out.state)
    assert out.state is not None and out.state.parent is not None


def test_a_child_that_cannot_be_applied_is_accepted_linked_and_failed() -> None:
    out = fail(None, submitted_child(), "boom")
    assert [e.type for e in out.events] == ["WorkflowAccepted", "ParentLinked",
                                            "NodeFinished", "WorkflowFailed"]
    check_history(out.events, out.state)
