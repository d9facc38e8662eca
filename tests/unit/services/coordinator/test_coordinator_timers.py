"""The coordinator's timer heap (``TimerIndex``)."""

from __future__ import annotations

from headwater.core.state import TimerState, WorkflowState
from services.coordinator.timers import TimerIndex


def state(workflow_id: str, **timers: int) -> WorkflowState:
    """A workflow holding ``timer_id=fire_at_ms`` timers."""
    return WorkflowState(
        workflow_id=workflow_id, spec_doc=None, input=None, tenant=None, name="",
        created_at_ms=0, updated_at_ms=0,
        timers={tid: TimerState(at, "a", None, 2) for tid, at in timers.items()},
    )


def test_pop_due_returns_due_timers_in_fire_order() -> None:
    index = TimerIndex()
    index.arm(state("w1", t_late=300, t_early=100))
    index.arm(state("w2", t_mid=200, t_future=10_000))
    assert len(index) == 4
    assert index.pop_due(99) == []
    assert index.pop_due(250) == [("w1", "t_early", 100), ("w2", "t_mid", 200)]
    assert index.pop_due(300) == [("w1", "t_late", 300)]  # due exactly at fire_at_ms
    assert len(index) == 1
    assert index.pop_due(10**12) == [("w2", "t_future", 10_000)]
    assert index.pop_due(10**12) == []


def test_equal_deadlines_all_fire() -> None:
    index = TimerIndex()
    index.arm(state("w1", a=5, b=5))
    index.arm(state("w2", a=5))
    assert sorted(index.pop_due(5)) == [("w1", "a", 5), ("w1", "b", 5), ("w2", "a", 5)]


def test_arming_the_same_timer_twice_does_not_double_it() -> None:
    index = TimerIndex()
    snapshot = state("w1", t=100)
    index.arm(snapshot)
    index.arm(snapshot)
    index.arm(state("w1", t=100, u=150))  # the next snapshot adds one timer
    assert len(index) == 2
    assert index.pop_due(1000) == [("w1", "t", 100), ("w1", "u", 150)]


def test_same_timer_id_in_two_workflows_is_two_timers() -> None:
    index = TimerIndex()
    index.arm(state("w1", **{"retry:a:2": 10}))
    index.arm(state("w2", **{"retry:a:2": 20}))
    assert index.pop_due(20) == [("w1", "retry:a:2", 10), ("w2", "retry:a:2", 20)]


def test_a_popped_timer_can_be_armed_again() -> None:
    index = TimerIndex()
    snapshot = state("w1", t=100)
    index.arm(snapshot)
    assert index.pop_due(100) == [("w1", "t", 100)]
    index.arm(snapshot)  # still in the state until its TimerFired is processed
    assert index.pop_due(100) == [("w1", "t", 100)]


def test_clear_forgets_everything() -> None:
    index = TimerIndex()
    index.arm(state("w1", t=1))
    index.clear()
    assert len(index) == 0 and index.pop_due(10) == []
    index.arm(state("w1", t=1))
    assert index.pop_due(10) == [("w1", "t", 1)]


# -- deadlines and leases, derived from the tasks ------------------------------------------

def _running(timeout: int | None = 10) -> WorkflowState:
    from headwater.core import events as ev
    from headwater.core.machine import step

    doc = {"name": "t", "nodes": [{"id": "a", "task": "t", "timeout": timeout,
                                   "heartbeat_timeout": 3}]}
    s = step(None, ev.WorkflowSubmitted("w1", doc, None, 1_000)).state
    s = step(s, ev.TaskStarted("w1", "a", None, 1, 1_100, "wk")).state
    assert s is not None
    return s


def test_a_running_attempt_has_a_deadline_and_a_lease() -> None:
    index = TimerIndex()
    index.arm(_running(), ["a"])
    assert index.pop_due(10**12) == [("w1", "lease:a:1", 4_100), ("w1", "deadline:a:1", 11_000)]


def test_a_heartbeat_moves_the_lease_and_the_old_entry_never_fires() -> None:
    from headwater.core import events as ev
    from headwater.core.machine import step

    index = TimerIndex()
    s = _running(timeout=None)
    index.arm(s, ["a"])
    s = step(s, ev.TaskHeartbeated("w1", "a", None, 1, 3_000)).state
    assert s is not None
    index.arm(s, ["a"])
    assert index.pop_due(5_000) == []  # the lease at 4,100 moved to 6,000
    assert index.pop_due(6_000) == [("w1", "lease:a:1", 6_000)]


def test_an_attempt_that_ended_takes_its_timers_with_it() -> None:
    from headwater.core import events as ev
    from headwater.core.machine import step

    index = TimerIndex()
    s = _running()
    index.arm(s, ["a"])
    s = step(s, ev.TaskSucceeded("w1", "a", None, 1, 1_200, "out")).state
    assert s is not None
    index.arm(s, ["a"])
    assert len(index) == 0
    assert index.pop_due(10**12) == []


def test_arming_without_keys_derives_every_task() -> None:
    index = TimerIndex()
    index.arm(_running())
    assert len(index) == 2


def test_after_a_takeover_every_lease_gets_one_full_heartbeat_timeout() -> None:
    index = TimerIndex()
    index.leases_from_ms = 50_000  # took the partitions over long after the last heartbeat
    index.arm(_running(), ["a"])
    assert index.pop_due(52_999) == [("w1", "deadline:a:1", 11_000)]
    assert index.pop_due(53_000) == [("w1", "lease:a:1", 53_000)]
