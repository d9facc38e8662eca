"""Which attempts a worker is told to stop (``headwater.core.fencing.stop_for``), and failing a
workflow as data (``headwater.core.machine.fail``)."""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import (
    T0,
    WF,
    cancel,
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
from headwater.core.fencing import stop_for
from headwater.core.machine import fail as fail_workflow

RETRY = {"max_attempts": 3, "backoff_base": 1}
ONE = spec(task("a", retry=RETRY, heartbeat_timeout=2))


def beat(attempt: int = 1, at: int = T0 + 100) -> ev.TaskHeartbeated:
    return ev.TaskHeartbeated(WF, "a", None, attempt, at)


STOPS: list[tuple[str, list[ev.Input], Any, str | None]] = [
    ("the current attempt runs on", [started("a")], beat(), None),
    ("a start of a queued attempt", [], started("a"), None),
    ("a heartbeat after the lease expired", [started("a"), fired("lease:a:1", T0 + 3000)],
     beat(at=T0 + 3100), "lost"),
    ("a start after the workflow was cancelled", [cancel()], started("a"), "cancelled"),
    ("a heartbeat of a superseded attempt",
     [started("a"), fail("a"), fired("retry:a:2", T0 + 2000)], beat(1), "superseded"),
    ("a start of an attempt that already succeeded (a redelivery)", [ok("a")],
     started("a"), "already ended"),
    ("a report for a task it does not know", [], ev.TaskHeartbeated(WF, "zz", None, 1, T0),
     None),
    ("a report from the future", [], beat(attempt=5), None),
]


@pytest.mark.parametrize(("name", "given", "report", "reason"), STOPS,
                         ids=[s[0] for s in STOPS])
def test_stop_for(name: str, given: list[ev.Input], report: Any, reason: str | None) -> None:
    result = run([submit(ONE), *given, report])
    stop = stop_for(result.state, report)
    if reason is None:
        assert stop is None, name
    else:
        assert stop is not None, name
        assert (stop.node, stop.index, stop.attempt) == (report.node, report.index,
                                                          report.attempt)
        assert reason in stop.reason


def test_outcomes_and_unknown_workflows_get_no_stop() -> None:
    assert stop_for(None, started("a")) is None
    result = run([submit(ONE), cancel()])
    assert stop_for(result.state, ok("a")) is None  # an outcome needs no stop


def test_fail_a_running_workflow_cancels_its_attempts_and_fails_it() -> None:
    head = run([submit(spec(map_node("m", "${input.xs}"))), ], )
    head = run([submit(spec(map_node("m", "${input.xs}")), {"xs": [1, 2]})])
    out = fail_workflow(head.state, ok("m", "x" * 10, index=0), "record too large")
    assert [e.type for e in out.events] == [
        "TaskCancelled", "TaskCancelled", "NodeFinished", "WorkflowFailed"]
    assert out.state is not None and out.state.error == "record too large"
    check_history(head.history + out.events, out.state)
    assert fail_workflow(out.state, ok("m", index=1), "again").events == []


def test_fail_a_submission_accepts_then_fails_it() -> None:
    doc = spec(task("a"))
    out = fail_workflow(None, submit(doc), "a dispatch would exceed the record limit")
    assert [e.type for e in out.events] == [
        "WorkflowAccepted", "NodeFinished", "WorkflowFailed"]
    assert fail_workflow(None, ok("a"), "x").events == []


CONTINUE = spec(task("m", input={"v": "${item.x}"}, kind="map", over="${input.xs}",
                     continue_on_error=True, max_concurrency=1),
                task("d", "m", input="${nodes.m.output}"))


def test_a_continue_on_error_map_item_whose_input_fails_is_that_items_failure() -> None:
    xs = {"xs": [{"x": 1}, {"y": 2}, {"x": 3}]}
    result = run([submit(CONTINUE, xs), ok("m", "one", index=0), ok("m", "three", index=2)])
    assert result.state is not None
    check_history(result.history, result.state)
    dispatched = [(d.node, d.index) for d in result.bodies(ev.TaskDispatched)]
    assert dispatched == [("m", 0), ("m", 2), ("d", None)]
    (item_failure,) = result.bodies(ev.TaskFailed)
    assert (item_failure.index, item_failure.error_type) == (1, "InputReferenceError")
    (d,) = [x for x in result.bodies(ev.TaskDispatched) if x.node == "d"]
    assert d.input[0] == "one" and d.input[2] == "three"
    assert d.input[1]["error"]["type"] == "InputReferenceError"


def test_a_continue_on_error_map_whose_every_item_fails_at_dispatch_finishes_failed() -> None:
    result = run([submit(CONTINUE, {"xs": [{}, {}]})])
    assert result.state is not None
    assert result.state.nodes["m"].status.value == "failed"
    assert [d.node for d in result.bodies(ev.TaskDispatched)] == ["d"]
