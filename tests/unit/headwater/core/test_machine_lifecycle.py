"""State-machine tables: submission, cancellation and finished or unknown workflows."""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    cancel,
    check_case,
    fail,
    fired,
    has,
    map_node,
    ok,
    run,
    spec,
    started,
    submit,
    task,
)

from headwater.core import events as ev

RETRY = {"max_attempts": 3, "backoff_base": 1}
# a waits for its retry timer, m has two children in flight, z waits for both.
BUSY = spec(task("a", retry=RETRY), map_node("m", "${input.xs}"), task("z", "a", "m"))
BUSY_INPUT = {"xs": ["p", "q"]}
BUSY_GIVEN: list[ev.Input] = [fail("a"), started("m", index=0), ok("m", "P", index=1)]
CANCELLED: list[ev.Input] = [*BUSY_GIVEN, cancel()]

CYCLIC = spec(task("a", "b"), task("b", "a"))
INVALID_DOCS: list[tuple[str, Any, str]] = [
    ("cycle", CYCLIC, "cycle"),
    ("not a mapping", ["a", "b"], "mapping"),
    ("null", None, "mapping"),
    ("no nodes", {"name": "x", "nodes": []}, "nodes"),
    ("unknown field", spec(task("a", colour="red")), "unknown field 'colour'"),
]

CASES = [
    Case(
        "cancel a running workflow: cancelled, timers dropped, open work cancelled",
        BUSY, input=BUSY_INPUT, given=BUSY_GIVEN, when=cancel(),
        events=[("TaskCancelled", {"node": "a", "attempt": 1, "reason": "user asked"}),
                ("TaskCancelled", {"node": "m", "index": 0, "attempt": 1}),
                ("NodeFinished", {"node": "a", "status": "cancelled"}),
                ("NodeFinished", {"node": "m", "status": "cancelled"}),
                ("NodeFinished", {"node": "z", "status": "cancelled"}),
                ("WorkflowCancelled", {"reason": "user asked", "at_ms": T0 + 500})],
        state={"status": "cancelled", "timers": {}, "open_nodes": 0, "error": "user asked",
               "nodes.a.status": "cancelled", "nodes.m.status": "cancelled",
               "nodes.z.status": "cancelled", "tasks.a.status": "cancelled",
               "tasks.m[0].status": "cancelled", "tasks.m[1].status": "succeeded",
               "updated_at_ms": T0 + 500},
    ),
    Case("a second cancel records nothing",
         BUSY, input=BUSY_INPUT, given=CANCELLED, when=cancel(T0 + 600), events=[],
         state={"status": "cancelled"}),
    Case("a completion after cancel records nothing",
         BUSY, input=BUSY_INPUT, given=CANCELLED, when=ok("m", "Q", index=0), events=[]),
    Case("a failure after cancel records nothing",
         BUSY, input=BUSY_INPUT, given=CANCELLED, when=fail("m", index=0), events=[]),
    Case("the dropped retry timer firing after cancel records nothing",
         BUSY, input=BUSY_INPUT, given=CANCELLED, when=fired("retry:a:2", T0 + 2000),
         events=[]),
    Case("cancel after the workflow succeeded records nothing",
         spec(task("a")), given=[ok("a")], when=cancel(), events=[],
         state={"status": "succeeded"}),
    Case("cancel for an unknown workflow records nothing",
         None, submit=False, given=[], when=cancel(), events=[]),
    Case("a report for an unknown workflow records nothing",
         None, submit=False, given=[], when=ok("a"), events=[]),
    Case("a timer for an unknown workflow records nothing",
         None, submit=False, given=[], when=fired("retry:a:2", T0), events=[]),
    Case("a duplicate WorkflowSubmitted records nothing",
         BUSY, input=BUSY_INPUT, given=[], when=submit(BUSY, BUSY_INPUT), events=[],
         state={"seq": 5}),
    Case("a WorkflowSubmitted with another spec for an existing id records nothing",
         BUSY, input=BUSY_INPUT, given=[], when=submit(spec(task("other"))), events=[]),
    Case("a WorkflowSubmitted for a finished workflow records nothing",
         spec(task("a")), given=[ok("a")], when=submit(spec(task("a"))), events=[],
         state={"status": "succeeded"}),
    Case("cancel before anything ran",
         spec(task("a"), task("b", "a")), given=[], when=cancel(),
         events=[("TaskCancelled", {"node": "a", "index": None, "attempt": 1}),
                 ("NodeFinished", {"node": "a", "status": "cancelled"}),
                 ("NodeFinished", {"node": "b", "status": "cancelled"}),
                 ("WorkflowCancelled", {})],
         state={"nodes.a.status": "cancelled", "nodes.b.status": "cancelled",
                "tasks.a.status": "cancelled"}),
    *(
        Case(f"invalid spec straight from Kafka ({label}): accepted, then failed",
             doc, submit=False, given=[], when=submit(doc, {"k": 1}),
             events=[("WorkflowAccepted", {"spec": doc, "input": {"k": 1}}),
                     ("WorkflowFailed", {"error": has("invalid spec", fault)})],
             state={"status": "failed", "spec_error": has(fault), "nodes": {}, "tasks": {},
                    "error": has("invalid spec")})
        for label, doc, fault in INVALID_DOCS
    ),
    Case("a report for a workflow whose spec was invalid records nothing",
         CYCLIC, given=[], when=ok("a"), events=[]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_lifecycle_table(case: Case) -> None:
    check_case(case)


def test_map_children_in_flight_at_cancel_are_all_cancelled() -> None:
    result = run([submit(BUSY, BUSY_INPUT), cancel()])
    assert result.state is not None
    assert {k: t.status.value for k, t in result.state.tasks.items()} == {
        "a": "cancelled", "m[0]": "cancelled", "m[1]": "cancelled"}


def test_nothing_is_recorded_after_a_terminal_event() -> None:
    late: list[ev.Input] = [ok("a"), fail("a"), started("a"), cancel(), fired("retry:a:2", T0),
                            submit(BUSY), ok("m", index=0), ok("zzz")]
    finished: list[tuple[dict[str, Any], list[ev.Input]]] = [
        (BUSY, [fail("a", retryable=False)]), (BUSY, CANCELLED), (spec(task("a")), [ok("a")])]
    for doc, prefix in finished:
        done = run([submit(doc, BUSY_INPUT), *prefix])
        assert done.state is not None and done.state.status.terminal
        after = run(late, done.state)
        assert after.history == []
        assert after.state is done.state


def test_step_modifies_and_returns_the_state_it_was_given() -> None:
    first = run([submit(spec(task("a")))])
    assert first.state is not None
    before = first.state
    result = run([ok("a")], before)
    assert result.state is before
    assert before.status.value == "succeeded"
    assert before.workflow_id == WF


def test_self_dependency_with_a_reference_fails_the_workflow_as_invalid() -> None:
    doc = spec(task("a", "a", input="${nodes.a.output}"))
    result = run([submit(doc)])
    assert result.types == ["WorkflowAccepted", "WorkflowFailed"]
