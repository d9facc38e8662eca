"""State-machine tables: ``restart_on_failure`` (a lost attempt restarts the whole run as
a new generation) and its bounds."""

from __future__ import annotations

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    check_case,
    check_history,
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
from headwater.core.machine import step

RESTARTS = spec(task("a", heartbeat_timeout=5), task("b", "a", heartbeat_timeout=5,
                                                     retry={"max_attempts": 3,
                                                            "backoff_base": 1}),
                restart_on_failure=True, max_restarts=2)
A_DONE = [started("a"), ok("a", "A", at=T0 + 60)]
B_STARTED = ev.TaskStarted(WF, "b", None, 1, T0 + 70, "worker-1")
B_LOST = fired("lease:b:1", T0 + 70 + 5000)


def _lost_in_generation_1() -> list[ev.Input]:
    return [*A_DONE, B_STARTED, B_LOST]


CASES = [
    Case("a lost attempt restarts the run: the others cancelled, the roots start again",
         RESTARTS, given=[*A_DONE, B_STARTED], when=B_LOST,
         events=[("TimerFired", {"timer_id": "lease:b:1"}),
                 ("TaskCancelled", {"node": "b", "attempt": 1,
                                    "reason": has("restarting the run", "b attempt 1",
                                                  "lost", "worker-1")}),
                 ("WorkflowRestarted", {"generation": 2, "attempt_floor": 1,
                                        "dropped": {"a": 1, "b": 1},
                                        "reason": has("b attempt 1", "lost")}),
                 ("TaskDispatched", {"node": "a", "attempt": 2})],
         state={"generation": 2, "attempt_floor": 1, "nodes.a.status": "running",
                "nodes.b.status": "pending", "outputs": {}, "status": "running"}),
    Case("without restart_on_failure a lost attempt is retried as before",
         spec(task("a", heartbeat_timeout=5, retry={"max_attempts": 2})),
         given=[started("a")], when=fired("lease:a:1", T0 + 50 + 5000),
         events=[("TimerFired", {}), ("TaskFailed", {"error_type": "HeartbeatTimeout"}),
                 ("TimerScheduled", {"attempt": 2})], state={"generation": 1}),
    Case("a failure the worker reports is retried by the policy, not restarted",
         RESTARTS, given=[*A_DONE, B_STARTED], when=fail("b", at=T0 + 80),
         events=[("TaskFailed", {}), ("TimerScheduled", {"attempt": 2})],
         state={"generation": 1}),
    Case("a deadline that passes is retried by the policy, not restarted",
         spec(task("a", timeout=2, heartbeat_timeout=5, retry={"max_attempts": 2}),
              restart_on_failure=True),
         given=[started("a")], when=fired("deadline:a:1", T0 + 2000),
         events=[("TimerFired", {}), ("TaskFailed", {"error_type": "TimeoutError"}),
                 ("TimerScheduled", {"attempt": 2})], state={"generation": 1}),
    Case("the late outcome of the old generation's attempt is discarded as superseded",
         RESTARTS, given=[*_lost_in_generation_1(),
                          ev.TaskStarted(WF, "a", None, 2, T0 + 5100, "worker-2")],
         when=ok("a", "late", attempt=1, at=T0 + 5200),
         events=[("ReportDiscarded", {"attempt": 1, "reason": has("superseded")})],
         state={"outputs": {}}),
    Case("a late outcome of a task the new generation has not dispatched changes nothing",
         RESTARTS, given=_lost_in_generation_1(), when=ok("b", "late", at=T0 + 5200),
         events=[]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_restart_table(case: Case) -> None:
    check_case(case)


def test_the_new_generation_runs_to_the_end_with_its_own_attempt_numbers() -> None:
    result = run([submit(RESTARTS), *_lost_in_generation_1(),
                  ev.TaskStarted(WF, "a", None, 2, T0 + 5100, "worker-2"),
                  ok("a", "A2", attempt=2, at=T0 + 5200),
                  ev.TaskStarted(WF, "b", None, 2, T0 + 5300, "worker-2"),
                  ok("b", "B2", attempt=2, at=T0 + 5400)])
    assert result.state is not None and result.state.status.value == "succeeded"
    assert result.state.output == {"b": "B2"}
    assert [(d.node, d.attempt) for d in result.bodies(ev.TaskDispatched)] == [
        ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    check_history(result.history, result.state)


def test_retries_count_per_generation() -> None:
    """max_attempts 3 for b: in generation 2 its attempts 2, 3, 4 are its three tries."""
    inputs: list[ev.Input] = [submit(RESTARTS), *_lost_in_generation_1(),
                              ev.TaskStarted(WF, "a", None, 2, T0 + 5100, "w"),
                              ok("a", "A2", attempt=2, at=T0 + 5200)]
    at = T0 + 5300
    for attempt in (2, 3, 4):
        inputs += [ev.TaskStarted(WF, "b", None, attempt, at, "w"),
                   fail("b", attempt=attempt, at=at + 10)]
        at += 10_000
        inputs.append(fired(f"retry:b:{attempt + 1}", at))
    result = run(inputs)
    assert result.state is not None and result.state.status.value == "failed"
    assert "b failed after 3 attempts" in result.state.error
    assert [d.attempt for d in result.bodies(ev.TaskDispatched) if d.node == "b"] == [1, 2, 3, 4]
    check_history(result.history, result.state)


def test_after_max_restarts_a_lost_attempt_is_retried_by_its_policy() -> None:
    doc = spec(task("a", heartbeat_timeout=5, retry={"max_attempts": 2}),
               restart_on_failure=True, max_restarts=1)
    result = run([submit(doc), started("a"), fired("lease:a:1", T0 + 5050),
                  started("a", attempt=2, at=T0 + 5100), fired("lease:a:2", T0 + 10_100)])
    assert result.state is not None
    assert [type(b).__name__ for b in (e.body for e in result.per_step[-1])] == [
        "TimerFired", "TaskFailed", "TimerScheduled"]
    assert len(result.bodies(ev.WorkflowRestarted)) == 1
    assert result.state.generation == 2
    check_history(result.history, result.state)


def test_a_restart_cancels_a_map_and_its_child_workflows_and_starts_them_anew() -> None:
    child = {"name": "c", "nodes": [{"id": "x", "task": "t.x"}]}
    doc = spec(map_node("m", "${input.items}", heartbeat_timeout=5),
               {"id": "w", "kind": "workflow", "workflow": child},
               restart_on_failure=True)
    result = run([submit(doc, {"items": [1, 2]}),
                  started("m", index=0), started("m", index=1),
                  ok("m", 1, index=0, at=T0 + 60),
                  fired("lease:m[1]:1", T0 + 50 + 5000)])
    restart_step = [e.body for e in result.per_step[-1]]
    cancelled = sorted((b.node, b.index) for b in restart_step
                       if isinstance(b, ev.TaskCancelled))
    assert cancelled == [("m", 1), ("w", None)]
    dispatched = [(b.node, b.index, b.attempt) for b in restart_step
                  if isinstance(b, ev.TaskDispatched)]
    assert dispatched == [("m", 0, 2), ("m", 1, 2), ("w", None, 2)]
    assert result.state is not None and result.state.nodes["m"].done == 0
    check_history(result.history, result.state)


def test_replaying_a_restarted_history_rebuilds_the_state() -> None:
    result = run([submit(RESTARTS), *_lost_in_generation_1()])
    from machine_harness import replay, snapshot
    assert snapshot(replay(result.history)) == snapshot(result.state)


@pytest.mark.parametrize("doc, fault", [
    (spec(task("a"), restart_on_failure="yes"), "restart_on_failure must be true or false"),
    (spec(task("a"), restart_on_failure=True, max_restarts=0), "max_restarts must be"),
    (spec(task("a"), restart_on_failure=True, max_restarts=101), "max_restarts must be"),
    (spec(task("a"), restart_on_failure=True, max_restarts=True), "max_restarts must be"),
    (spec(task("a"), max_restarts=2), "only with restart_on_failure"),
    (spec({"id": "w", "kind": "wait", "signal": "go"}, restart_on_failure=True),
     "a workflow with a wait or a schedule"),
])
def test_restart_fields_are_checked(doc: object, fault: str) -> None:
    from headwater.core.spec import parse_spec
    from headwater.errors import SpecError

    with pytest.raises(SpecError) as caught:
        parse_spec(doc)
    assert any(fault in f for f in caught.value.faults), caught.value.faults


def test_an_old_generations_lease_timer_changes_nothing_in_the_new_one() -> None:
    state = run([submit(RESTARTS), *_lost_in_generation_1()]).state
    assert step(state, fired("lease:b:1", T0 + 99_000)).events == []
