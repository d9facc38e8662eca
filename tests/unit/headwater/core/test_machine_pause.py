"""State-machine tables: pausing and resuming a run (``machine/pause.py``)."""

from __future__ import annotations

import dataclasses

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    cancel,
    check_case,
    check_history,
    fail,
    fired,
    map_node,
    ok,
    run,
    spec,
    started,
    submit,
    task,
)

from headwater.core import events as ev
from headwater.core.machine import start

TWO = spec(task("a"), task("b", "a"))
PAIR = spec(task("a"), task("c"), task("b", "a"))
NAP = spec(task("a"), {"id": "s", "kind": "sleep", "needs": ["a"], "duration": 2},
           task("b", "s"))
MAP = spec(map_node("m", "${input.xs}", max_concurrency=2, retry={"max_attempts": 3}))
MAP_INPUT = {"xs": [1, 2, 3]}
WAKE = T0 + 100 + 2000  # the sleep's deadline: a's success plus 2 s


def pause(at: int = T0 + 10, request_id: str = "p1") -> ev.PauseRequested:
    return ev.PauseRequested(WF, at, request_id, "alice", "deploy window")


def resume(at: int = T0 + 9000, request_id: str = "r1") -> ev.ResumeRequested:
    return ev.ResumeRequested(WF, at, request_id, "alice")


LIMITED = spec(task("a", concurrency={"key": "acme", "limit": 1}), task("b", "a"))
ACME = "limit::concurrency:acme"

CASES = [
    Case("a permit granted while paused is given back at once; the attempt is held",
         LIMITED, given=[pause()], when=ev.PermitGranted(WF, "a", None, 1, ACME, T0 + 20),
         events=[("PermitGranted", {}), ("PermitsReturned", {"limiters": (ACME,)}),
                 ("DispatchDeferred", {"node": "a"})],
         state={"tasks.a.status": "held", "tasks.a.waiting_for": "(paused)",
                "tasks.a.limiters": None}),
    Case("its resume asks for the permit again",
         LIMITED, given=[pause(), ev.PermitGranted(WF, "a", None, 1, ACME, T0 + 20)],
         when=resume(),
         events=[("WorkflowResumed", {"held": 1}), ("TaskHeld", {"node": "a", "attempt": 1})],
         state={"tasks.a.status": "held", "tasks.a.waiting_for": ACME,
                "tasks.a.limiters": [ACME]}),
    Case("a cancel of a paused run ends its held attempt, which holds no permit",
         LIMITED, given=[pause(), ev.PermitGranted(WF, "a", None, 1, ACME, T0 + 20)],
         when=cancel(T0 + 30),
         events=[("TaskCancelled", {"node": "a"}),
                 ("NodeFinished", {"node": "a"}), ("NodeFinished", {"node": "b"}),
                 ("WorkflowCancelled", {})]),
    Case("a recalled attempt gives back its permit first",
         LIMITED, given=[ev.PermitGranted(WF, "a", None, 1, ACME, T0 + 20)], when=pause(),
         events=[("WorkflowPaused", {}),
                 ("PermitsReturned", {"node": "a", "attempt": 1, "limiters": (ACME,)}),
                 ("DispatchRecalled", {"node": "a", "attempt": 1})],
         state={"tasks.a.status": "held", "tasks.a.attempt": 2,
                "tasks.a.waiting_for": "(paused)", "tasks.a.limiters": None}),
    Case("and its next attempt asks for the permit again at the resume",
         LIMITED, given=[ev.PermitGranted(WF, "a", None, 1, ACME, T0 + 20), pause()],
         when=resume(),
         events=[("WorkflowResumed", {"held": 1}),
                 ("TaskHeld", {"node": "a", "attempt": 2})],
         state={"tasks.a.status": "held", "tasks.a.waiting_for": ACME,
                "tasks.a.recalled": 1}),
    Case("a pause records WorkflowPaused and dispatches nothing",
         TWO, given=[started("a")], when=pause(),
         events=[("WorkflowPaused", {"by": "alice", "reason": "deploy window",
                                     "request_id": "p1"})],
         state={"pause.paused": True, "pause.since_ms": T0 + 10, "pause.by": "alice",
                "tasks.a.status": "running"}),
    Case("a pause recalls the attempt on the queue that has not started",
         TWO, given=[], when=pause(),
         events=[("WorkflowPaused", {"request_id": "p1"}),
                 ("DispatchRecalled", {"node": "a", "index": None, "attempt": 1})],
         state={"tasks.a.status": "held", "tasks.a.attempt": 2, "tasks.a.recalled": 1,
                "tasks.a.waiting_for": "(paused)", "tasks.a.deadline_ms": None,
                "pause.deferred": [{"task": "a"}]}),
    Case("it recalls a map's dispatched items, not its running ones, in item order",
         MAP, input=MAP_INPUT, given=[started("m", index=1)], when=pause(T0 + 50),
         events=[("WorkflowPaused", {}),
                 ("DispatchRecalled", {"node": "m", "index": 0, "attempt": 1})],
         state={"tasks.m[0].status": "held", "tasks.m[1].status": "running",
                "nodes.m.running": 2}),
    Case("the resume dispatches the recalled attempt's next one",
         TWO, given=[pause()], when=resume(),
         events=[("WorkflowResumed", {"held": 1}),
                 ("TaskDispatched", {"node": "a", "attempt": 2})],
         state={"tasks.a.status": "dispatched", "tasks.a.recalled": 1}),
    Case("a recalled attempt does not count against the retry policy",
         spec(task("a", retry={"max_attempts": 2})),
         given=[pause(), resume(T0 + 20), started("a", attempt=2, at=T0 + 30)],
         when=fail("a", attempt=2, at=T0 + 40),
         events=[("TaskFailed", {"attempt": 2}), ("TimerScheduled", {"attempt": 3})]),
    Case("a report of the recalled attempt changes nothing",
         TWO, given=[pause()], when=ok("a", "A"),
         events=[("ReportDiscarded", {})],
         state={"tasks.a.status": "held", "tasks.a.attempt": 2}),
    Case("a second pause of a paused run records nothing",
         TWO, given=[pause()], when=pause(T0 + 20, "p2"), events=[]),
    Case("a resume of a run that is not paused records nothing",
         TWO, given=[], when=resume(), events=[]),
    Case("an attempt in flight finishes while paused; its dependent is held, not dispatched",
         TWO, given=[started("a"), pause()], when=ok("a", "A"),
         events=[("TaskSucceeded", {"node": "a"}), ("NodeFinished", {"node": "a"}),
                 ("DispatchDeferred", {"node": "b", "attempt": 1})],
         state={"tasks.b.status": "held", "tasks.b.waiting_for": "(paused)",
                "nodes.b.status": "running", "pause.deferred": [{"task": "b"}]}),
    Case("a resume dispatches the held attempts in the order they were held",
         PAIR, given=[started("a"), started("c"), pause(), ok("c", "C"), ok("a", "A")],
         when=resume(),
         events=[("WorkflowResumed", {"held": 1, "due": 0, "by": "alice"}),
                 ("TaskDispatched", {"node": "b", "attempt": 1, "input": None})],
         state={"pause.paused": False, "pause.deferred": [], "tasks.b.status": "dispatched"}),
    Case("a sleep's timer that comes due while paused is kept as due, not fired",
         NAP, given=[ok("a", "A"), pause(T0 + 200)], when=fired("sleep:s", WAKE),
         events=[("TimerDeferred", {"timer_id": "sleep:s", "fire_at_ms": WAKE})],
         state={"timers": {}, "nodes.s.status": "running",
                "pause.deferred": [{"timer": "sleep:s", "fire_at_ms": WAKE, "node": "s",
                                    "index": None, "attempt": 0}]}),
    Case("an early firing while paused changes nothing",
         NAP, given=[ok("a", "A"), pause(T0 + 200)], when=fired("sleep:s", WAKE - 1),
         events=[]),
    Case("the resume fires the due timer with its own deadline, and the sleep's dependent "
         "is dispatched",
         NAP, given=[ok("a", "A"), pause(T0 + 200), fired("sleep:s", WAKE)],
         when=resume(),
         events=[("WorkflowResumed", {"held": 0, "due": 1}),
                 ("TimerFired", {"timer_id": "sleep:s", "at_ms": T0 + 9000}),
                 ("NodeFinished", {"node": "s", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "b"})]),
    Case("a retry timer due while paused is deferred; its attempt goes out at the resume",
         MAP, input=MAP_INPUT,
         given=[started("m", index=0), pause(T0 + 50), fail("m", index=0)],
         when=fired("retry:m[0]:2", T0 + 60_000),
         events=[("TimerDeferred", {"timer_id": "retry:m[0]:2"})],
         state={"tasks.m[0].status": "retry_wait"}),
    Case("a map item freed while paused holds the next item",
         MAP, input=MAP_INPUT,
         given=[started("m", index=0), started("m", index=1), pause(T0 + 50)],
         when=ok("m", 1, index=0),
         events=[("TaskSucceeded", {"index": 0}),
                 ("DispatchDeferred", {"node": "m", "index": 2})],
         state={"nodes.m.running": 2}),
    Case("a cancel of a paused run cancels its held attempts and ends it",
         TWO, given=[started("a"), pause(), ok("a", "A")], when=cancel(T0 + 600),
         events=[("TaskCancelled", {"node": "b"}), ("NodeFinished", {"node": "b"}),
                 ("WorkflowCancelled", {})]),
    Case("a copy of a pause after the resume records nothing (its request id)",
         TWO, given=[pause(), resume(T0 + 20)], when=pause(T0 + 30, "p1"), events=[]),
    Case("a resume may carry its pause's request id",
         TWO, given=[started("a"), pause(request_id="op-1")],
         when=resume(request_id="op-1"), events=[("WorkflowResumed", {"request_id": "op-1"})],
         state={"pause.paused": False, "pause.ids": ["op-1"], "pause.resume_ids": ["op-1"]}),
    Case("a definition's resume does not resume a run a user paused",
         TWO, given=[started("a"), pause()],
         when=ev.ResumeRequested(WF, T0 + 40, "d1", "definition:two"), events=[],
         state={"pause.paused": True}),
    Case("it resumes a run its definition's pause paused",
         TWO, given=[started("a"), ev.PauseRequested(WF, T0 + 10, "d0", "definition:two")],
         when=ev.ResumeRequested(WF, T0 + 40, "d1", "definition:two"),
         events=[("WorkflowResumed", {"by": "definition:two"})]),
    Case("a user's resume resumes a run its definition paused",
         TWO, given=[started("a"), ev.PauseRequested(WF, T0 + 10, "d0", "definition:two")],
         when=resume(T0 + 40), events=[("WorkflowResumed", {"by": "alice"})]),
    Case("a copy of that resume records nothing",
         TWO, given=[started("a"), pause(request_id="op-1"), resume(T0 + 20, "op-1"),
                     pause(T0 + 30, "op-2")],
         when=resume(T0 + 40, "op-1"), events=[]),
    Case("a new pause after a resume pauses again, and recalls the next attempt too",
         TWO, given=[pause(), resume(T0 + 20)], when=pause(T0 + 30, "p3"),
         events=[("WorkflowPaused", {"request_id": "p3"}),
                 ("DispatchRecalled", {"node": "a", "attempt": 2})],
         state={"tasks.a.attempt": 3, "tasks.a.recalled": 2}),
    Case("the attempt in flight when paused may end the run",
         spec(task("a")), given=[started("a"), pause()], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("WorkflowSucceeded", {"output": {"a": "A"}})]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pause_table(case: Case) -> None:
    check_case(case)


def test_a_pause_that_overtook_its_submission_starts_the_run_paused() -> None:
    result = start(submit(TWO), [pause(T0 - 5)])
    assert [e.type for e in result.events] == ["WorkflowAccepted", "WorkflowPaused",
                                                "DispatchDeferred"]
    check_history(result.events, result.state)


def test_pause_in_flight_timer_due_then_resume_finishes_with_the_right_output() -> None:
    """The e2e scenario on the pure core: a's attempt in flight when paused, its result
    applied while paused, the sleep's timer due while paused, and after the resume the
    timer fires and b runs; the run ends as it would have without the pause."""
    out = run([submit(NAP), started("a"), pause(T0 + 60), ok("a", "A"),
               fired("sleep:s", WAKE), resume(T0 + 9000), ok("b", "B", at=T0 + 9100)])
    check_history(out.history, out.state)
    assert out.types == [
        "WorkflowAccepted", "TaskDispatched", "TaskStarted", "WorkflowPaused",
        "TaskSucceeded", "NodeFinished", "SleepStarted", "TimerDeferred", "WorkflowResumed",
        "TimerFired", "NodeFinished", "TaskDispatched", "TaskSucceeded", "NodeFinished",
        "WorkflowSucceeded"]
    assert out.state is not None and out.state.status.value == "succeeded"
    assert out.state.output == {"b": "B"}
    paused_at = out.types.index("WorkflowPaused")
    resumed_at = out.types.index("WorkflowResumed")
    assert "TaskDispatched" not in out.types[paused_at:resumed_at]
    fired_at = [i for i, t in enumerate(out.types) if t == "TimerFired"]
    assert fired_at and all(i > resumed_at for i in fired_at)


def test_a_submission_paused_by_its_definition_starts_paused() -> None:
    paused = dataclasses.replace(submit(TWO), paused_by="definition:two")
    out = run([paused, resume(T0 + 50)])
    check_history(out.history, out.state)
    assert out.types == ["WorkflowAccepted", "WorkflowPaused", "DispatchDeferred",
                         "WorkflowResumed", "TaskDispatched"]
    assert out.bodies(ev.WorkflowPaused)[0].by == "definition:two"


def test_a_deadline_passing_while_paused_fails_the_run_and_cancels_what_it_holds() -> None:
    """The deadline bounds the run's time, paused or not: its timer is not deferred by
    the pause, and the run fails with its held dispatch and its running attempt
    cancelled (a resume afterwards records nothing)."""
    from headwater.core.deadline import RUN_DEADLINE_TIMER

    doc = spec(task("a"), task("c"), task("b", "a"), deadline=30)
    out = run([submit(doc), started("a"), pause(T0 + 60), ok("a", "A"),
               fired(RUN_DEADLINE_TIMER, T0 + 30_000), resume(T0 + 31_000)])
    check_history(out.history, out.state)
    assert out.state is not None and out.state.status.value == "failed"
    assert "DeadlineExceeded" in out.state.error
    assert "TimerDeferred" not in out.types and "WorkflowResumed" not in out.types
    assert {(b.node, b.index) for b in out.bodies(ev.TaskCancelled)} >= {("b", None)}
    assert out.state.tasks["b"].status.value == "cancelled"


def test_a_map_paused_mid_fan_out_then_cancelled_ends_every_item() -> None:
    out = run([submit(MAP, MAP_INPUT), started("m", index=0), pause(T0 + 60),
               ok("m", "x", index=0), cancel(T0 + 70)])
    check_history(out.history, out.state)
    assert out.state is not None and out.state.status.value == "cancelled"
    assert all(t.status.value in ("succeeded", "cancelled")
               for t in out.state.tasks.values())


def test_a_pause_and_its_resume_that_overtook_the_submission_both_wait_for_it() -> None:
    """Both travel on ``control``, the submission on ``submissions``: a coordinator that
    reads control first defers both (a resume dropped there left the run paused for
    ever, as the fault suite found with a coordinator killed before its intent)."""
    from headwater.core.machine import step

    assert step(None, pause(T0 - 5)).deferred
    assert step(None, resume(T0 - 4)).deferred
    result = start(submit(TWO), [pause(T0 - 5), resume(T0 - 4)])
    check_history(result.events, result.state)
    assert [e.type for e in result.events] == [
        "WorkflowAccepted", "WorkflowPaused", "WorkflowResumed", "TaskDispatched"]
    assert result.state is not None and not result.state.paused
