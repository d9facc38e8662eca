"""Stuck workflows: running, with no attempt queued or running, no timer and no wait."""

from __future__ import annotations

import kind_histories
import pytest
from machine_harness import T0, WF, fail, ok, run, started, submit
from test_machine_runs import DIAMOND, NAMES, RETRYING, _scenario

from headwater.core import events as ev
from headwater.core.state import WorkflowState
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus
from ops.history import Recorded
from ops.stuck import GRACE_MS, is_stuck, pending, scan


def state_after(inputs: list[ev.Input]) -> WorkflowState:
    state = run(inputs).state
    assert state is not None
    return state


@pytest.mark.parametrize("name", NAMES)
def test_a_finished_workflow_is_never_stuck(name: str) -> None:
    assert is_stuck(state_after(_scenario(name))) is None


@pytest.mark.parametrize("inputs, waits_for", [
    ([submit(DIAMOND)], ["task a dispatched"]),
    ([submit(DIAMOND), started("a")], ["task a running"]),
    ([submit(DIAMOND), ok("a", 1), started("b")], ["task b running", "task c dispatched"]),
    ([submit(RETRYING), fail("a", at=T0 + 10)], ["timer retry:a:2"]),
], ids=["queued", "running", "two at once", "retry timer"])
def test_a_workflow_with_something_pending_is_not_stuck(inputs: list[ev.Input],
                                                         waits_for: list[str]) -> None:
    state = state_after(inputs)
    assert pending(state) == waits_for
    assert is_stuck(state) is None


def test_finished_tasks_with_unfinished_nodes_and_nothing_pending_is_stuck() -> None:
    # As if the coordinator had recorded the outcomes but lost the decisions after them.
    state = state_after([submit(DIAMOND), ok("a", 1), started("b"), started("c")])
    for key in ("b", "c"):
        state.tasks[key].status = TaskStatus.SUCCEEDED
    reason = is_stuck(state)
    assert reason == ("no attempt queued or running, no timer and no wait, with nodes unfinished: "
                      "b (running), c (running), d (pending)")


def test_a_task_waiting_to_retry_without_its_timer_is_stuck() -> None:
    state = state_after([submit(RETRYING), fail("a", at=T0 + 10)])
    state.timers.clear()
    assert is_stuck(state) == "task a waits to retry without a retry timer"


def test_a_running_workflow_with_an_invalid_spec_or_every_node_done_is_stuck() -> None:
    invalid = state_after([submit({"name": "t", "nodes": "no"})])
    invalid.status = WorkflowStatus.RUNNING  # its WorkflowFailed lost
    assert "its spec is invalid" in (is_stuck(invalid) or "")
    done = state_after([submit(DIAMOND), ok("a", 1), ok("b"), ok("c"), started("d")])
    done.tasks["d"].status = TaskStatus.SUCCEEDED
    for node in done.nodes.values():
        node.status = NodeStatus.SUCCEEDED
    assert is_stuck(done) == "every node finished but the workflow did not"


def recorded(events: list[ev.HistoryEvent]) -> list[Recorded]:
    return [Recorded(e, i, e.body.at_ms) for i, e in enumerate(events)]


def test_scan_folds_every_history_and_lists_the_stuck_ones() -> None:
    finished = run(_scenario("map out of order")).history
    moving = run([submit(DIAMOND, wf="moving")]).history
    # The decisions after a's success (NodeFinished, the dispatches of b and c) are lost.
    lost = run([submit(DIAMOND, wf="lost"), ok("a", 1, wf="lost")]).history[:3]
    assert [e.type for e in lost] == ["WorkflowAccepted", "TaskDispatched", "TaskSucceeded"]
    gap = [*finished[:2], *finished[3:]]
    truncated = run([submit(DIAMOND, wf="old")]).history[1:]
    histories = {"done": recorded(finished), "moving": recorded(moving),
                 "lost": recorded(lost), "gap": recorded(gap), "old": recorded(truncated)}
    found = scan(histories, now_ms=T0 + 60_000)
    assert (found.workflows, found.running, found.recent) == (5, 2, 0)
    (stuck,) = found.stuck
    assert (stuck.workflow_id, stuck.name, stuck.seq) == ("lost", "t", 3)
    assert stuck.updated_at_ms == lost[-1].body.at_ms
    assert "a (running), b (pending)" in stuck.reason
    assert [w for w, _ in found.unfoldable] == ["gap"]
    assert found.truncated == [("old", 2)]


def test_scan_skips_workflows_updated_too_recently() -> None:
    lost = run([submit(DIAMOND, wf="lost"), ok("a", 1, wf="lost")]).history[:3]
    at = lost[-1].body.at_ms
    recent = scan({"lost": recorded(lost)}, now_ms=at + 5_000, older_than_ms=10_000)
    assert (recent.running, recent.recent, recent.stuck) == (1, 1, [])
    old = scan({"lost": recorded(lost)}, now_ms=at + 15_000, older_than_ms=10_000)
    assert [s.workflow_id for s in old.stuck] == ["lost"]


def test_a_wait_for_a_signal_is_pending_with_or_without_a_timeout() -> None:
    for_ever = state_after([submit(kind_histories.FOR_EVER)])
    assert pending(for_ever) == ["wait approve for signal approval"]
    assert is_stuck(for_ever, T0 + 10**9, {}) is None
    timed = state_after([submit(kind_histories.TIMING_OUT)])
    assert pending(timed) == ["timer wait:approve", "wait approve for signal approval"]
    assert is_stuck(timed) is None


def test_a_sleep_is_pending_until_its_wake_up_and_stuck_long_after() -> None:
    state = kind_histories.sleeping().state
    assert state is not None
    wake = T0 + 5010
    assert pending(state) == ["timer sleep:pause"]
    assert is_stuck(state, wake - 1000, {}) is None
    assert is_stuck(state, wake + GRACE_MS, {}) is None
    assert is_stuck(state, wake + GRACE_MS + 3000, {}) == (
        "sleep pause was due to wake 63 s ago and has not")
    assert is_stuck(state, wake + 600_000, {}, grace_ms=1_000_000) is None
    state.timers.clear()
    assert is_stuck(state) == "sleep pause has no wake-up timer"


def parent_state() -> WorkflowState:
    state = state_after([submit(kind_histories.PARENT, wf="p")])
    assert [(k, t.status.value) for k, t in state.tasks.items()] == [("c", "dispatched")]
    return state


def test_a_parent_whose_child_has_no_history_is_stuck_after_the_grace() -> None:
    parent = parent_state()
    assert pending(parent) == ["task c dispatched"]
    assert is_stuck(parent, T0 + GRACE_MS, {"p": parent}) is None
    assert is_stuck(parent, T0 + GRACE_MS + 5000, {"p": parent}) == (
        "task c/1 waits for child workflow p:c:1, which has no history 65 s after it was "
        "started")
    assert is_stuck(parent, T0 + GRACE_MS + 5000) is None  # children not judged


def test_a_parent_whose_child_ended_without_telling_it_is_stuck_after_the_grace() -> None:
    parent = parent_state()
    kid = kind_histories.child().state
    assert kid is not None
    seen: dict[str, WorkflowState | None] = {"p": parent, "p:c:1": kid}
    assert is_stuck(parent, T0 + 10**9, seen) is None  # the child runs
    seen["p:c:1"] = None  # its history does not fold: not judged
    assert is_stuck(parent, T0 + 10**9, seen) is None
    ended = state_after([*_child_inputs(), ev.TaskSucceeded("p:c:1", "x", None, 1,
                                                            T0 + 100, "X")])
    assert ended.status is WorkflowStatus.SUCCEEDED
    seen["p:c:1"] = ended
    assert is_stuck(parent, T0 + 100 + GRACE_MS, seen) is None
    assert is_stuck(parent, T0 + 100 + GRACE_MS + 1000, seen) == (
        "task c/1 waits for child workflow p:c:1, which ended (succeeded) 61 s ago")


def _child_inputs() -> list[ev.Input]:
    return [ev.ChildSubmitted("p:c:1", "p", "c", None, 1, kind_histories.KID, {"q": 1}, T0)]


def test_scan_finds_a_parent_whose_child_vanished() -> None:
    parent = run([submit(kind_histories.PARENT, wf="p")]).history
    waiting = run([submit(kind_histories.FOR_EVER, wf="w")]).history
    found = scan({"p": recorded(parent), "w": recorded(waiting)}, now_ms=T0 + 120_000)
    assert [(s.workflow_id, s.reason) for s in found.stuck] == [
        ("p", "task c/1 waits for child workflow p:c:1, which has no history 120 s after it "
              "was started")]
    kid = run(_child_inputs()).history
    assert scan({"p": recorded(parent), "p:c:1": recorded(kid)}, T0 + 120_000).stuck == []


def test_a_paused_run_with_a_held_attempt_and_a_due_retry_is_not_stuck() -> None:
    """Paused, its retry timer came due (out of ``state.timers``) and its next node is
    held: it waits for its resume, not stuck; resumed, it is pending again."""
    pause = ev.PauseRequested(WF, T0 + 5, "p1")
    state = state_after([submit(RETRYING), pause, fail("a", at=T0 + 10),
                         ev.TimerFired(WF, "retry:a:2", T0 + 600_000)])
    assert state.paused and not state.timers
    assert pending(state) == ["a resume (it is paused)"]
    assert is_stuck(state) is None
    resumed = run([ev.ResumeRequested(state.workflow_id, T0 + 700_000, "r1")], state).state
    assert resumed is not None and pending(resumed) == ["task a dispatched"]

