"""State-machine tables: cancellation, and a cancel racing the last completion."""

from __future__ import annotations

import pytest
from machine_harness import (
    T0,
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
from headwater.core.machine import start, step

TWO = spec(task("a"), task("b", "a"))
MAP = spec(map_node("m", "${input.xs}", max_concurrency=3, retry={"max_attempts": 2}))
MAP_INPUT = {"xs": list(range(10))}

CASES = [
    Case("cancel stops queued, running and retry-waiting attempts alike",
         MAP, input=MAP_INPUT, given=[started("m", index=0), fail("m", index=1)],
         when=cancel(),
         events=[("TaskCancelled", {"node": "m", "index": 0, "reason": "user asked"}),
                 ("TaskCancelled", {"node": "m", "index": 1}),
                 ("TaskCancelled", {"node": "m", "index": 2}),
                 ("NodeFinished", {"node": "m", "status": "cancelled"}),
                 ("WorkflowCancelled", {"reason": "user asked"})],
         state={"timers": {}, "nodes.m.running": 0, "tasks.m[1].outcome": "cancelled"}),
    Case("a retry timer firing after the cancel dispatches nothing",
         MAP, input=MAP_INPUT, given=[fail("m", index=1), cancel()],
         when=fired("retry:m[1]:2", T0 + 5000), events=[]),
    Case("no dispatch follows a cancel, whatever arrives",
         MAP, input=MAP_INPUT, given=[cancel()], when=ok("m", index=0), events=[]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_cancel_table(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("order", ["completion first", "cancel first"])
def test_cancel_and_the_last_completion_in_one_batch_give_one_terminal_state(
        order: str) -> None:
    head = [submit(TWO), ok("a", "A"), started("b")]
    last, stop = ok("b", "B", at=T0 + 500), cancel(T0 + 500)
    tail = [last, stop] if order == "completion first" else [stop, last]
    result = run([*head, *tail])
    assert result.state is not None
    check_history(result.history, result.state)
    terminal = [e for e in result.history if e.terminal]
    assert len(terminal) == 1
    expected = "succeeded" if order == "completion first" else "cancelled"
    assert result.state.status.value == expected
    assert result.per_step[-1] == []  # the loser of the race records nothing
    if expected == "cancelled":
        assert result.state.outputs == {"a": "A"}
        assert [c.node for c in result.bodies(ev.TaskCancelled)] == ["b"]


def test_a_second_cancel_is_harmless() -> None:
    result = run([submit(TWO), cancel(), cancel(T0 + 900)])
    assert result.per_step[-1] == []
    assert result.types[-1] == "WorkflowCancelled"


def test_cancelling_a_100_item_map_mid_run_leaves_no_dispatch_after_it() -> None:
    xs = {"xs": list(range(100))}
    doc = spec(map_node("m", "${input.xs}", max_concurrency=8))
    inputs = [submit(doc, xs), *(ok("m", i, index=i) for i in range(20)), cancel(T0 + 900),
              *(ok("m", i, index=i) for i in range(20, 28))]
    result = run(inputs)
    assert result.state is not None and result.state.status.value == "cancelled"
    types = result.types
    cut = types.index("WorkflowCancelled")
    assert "TaskDispatched" not in types[cut:]
    assert len(result.bodies(ev.TaskDispatched)) == 28
    assert len(result.bodies(ev.TaskCancelled)) == 8


# -- a cancel that overtook its submission (they travel on two topics) -------------------

def test_a_cancel_for_a_workflow_not_submitted_yet_is_deferred() -> None:
    out = step(None, cancel())
    assert out.deferred and out.state is None and out.events == []
    assert not step(None, ok("a")).deferred  # a report for an unknown workflow: dropped
    assert not step(None, fired("retry:a:2", T0)).deferred


def test_the_waiting_cancel_ends_the_workflow_before_any_node_starts() -> None:
    early = ev.CancelRequested("wf-1", T0 - 5, "user asked")
    out = start(submit(TWO), [early])
    check_history(out.events, out.state)
    assert [e.type for e in out.events] == [
        "WorkflowAccepted", "NodeFinished", "NodeFinished", "WorkflowCancelled"]
    assert not out.dispatches
    assert out.state is not None and out.state.status.value == "cancelled"
    assert all(e.body.at_ms >= T0 for e in out.events)  # never before its acceptance
    assert out.events[-1].body.reason == "user asked"


def test_a_submission_with_nothing_waiting_starts_as_usual() -> None:
    assert [e.type for e in start(submit(TWO), []).events] == [
        e.type for e in step(None, submit(TWO)).events]


def test_a_waiting_cancel_of_an_invalid_spec_leaves_it_failed() -> None:
    out = start(submit({"name": "bad", "nodes": []}), [cancel()])
    assert [e.type for e in out.events] == ["WorkflowAccepted", "WorkflowFailed"]
