"""State-machine tables: deadlines (``timeout``), leases (``heartbeat_timeout``) and late
outcomes of attempts that had already ended."""

from __future__ import annotations

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    check_case,
    fail,
    fired,
    has,
    ok,
    run,
    spec,
    started,
    submit,
    task,
)

from headwater.core import events as ev
from headwater.core.state import task_timers

RETRY = {"max_attempts": 2, "backoff_base": 1}
TIMED = spec(task("a", timeout=2, heartbeat_timeout=5, retry=RETRY))
ONE_SHOT = spec(task("a", timeout=2))


def beat(at: int, attempt: int = 1) -> ev.TaskHeartbeated:
    return ev.TaskHeartbeated(WF, "a", None, attempt, at)


DEADLINE_1 = fired("deadline:a:1", T0 + 2000)
LEASE_1 = fired("lease:a:1", T0 + 50 + 5000)

CASES = [
    Case("the deadline passes first: a failed, retryable attempt, then a retry timer",
         TIMED, given=[started("a")], when=DEADLINE_1,
         events=[("TimerFired", {"timer_id": "deadline:a:1"}),
                 ("TaskFailed", {"attempt": 1, "error_type": "TimeoutError",
                                 "error": has("timed out", "2 s after dispatch"),
                                 "retryable": True}),
                 ("TimerScheduled", {"attempt": 2})],
         state={"tasks.a.outcome": "timed_out", "tasks.a.status": "retry_wait"}),
    Case("the deadline of the last attempt fails the node with no timer pending",
         ONE_SHOT, given=[started("a")], when=DEADLINE_1,
         events=[("TimerFired", {}), ("TaskFailed", {"error_type": "TimeoutError"}),
                 ("NodeFinished", {"status": "failed", "error": has("TimeoutError")}),
                 ("WorkflowFailed", {})],
         state={"timers": {}, "status": "failed"}),
    Case("the late result of a timed-out attempt is recorded as discarded, nothing else",
         TIMED, given=[started("a"), DEADLINE_1], when=ok("a", "late", at=T0 + 2500),
         events=[("ReportDiscarded", {"attempt": 1, "report": "TaskSucceeded",
                                      "reason": has("timed out")})],
         state={"tasks.a.status": "retry_wait", "outputs": {}}),
    Case("the worker's own timeout report after the deadline fired is discarded too",
         TIMED, given=[started("a"), DEADLINE_1], when=fail("a", at=T0 + 2001),
         events=[("ReportDiscarded", {"report": "TaskFailed"})]),
    Case("a deadline timer that fires early (a stale index entry) changes nothing",
         TIMED, given=[started("a")], when=fired("deadline:a:1", T0 + 1999), events=[]),
    Case("a deadline timer for a finished attempt changes nothing",
         TIMED, given=[started("a"), ok("a")], when=DEADLINE_1, events=[]),
    Case("a deadline timer of an older attempt changes nothing",
         TIMED, given=[started("a"), DEADLINE_1, fired("retry:a:2", T0 + 3000)],
         when=fired("deadline:a:1", T0 + 9000), events=[]),
    Case("no heartbeat for heartbeat_timeout: the attempt is lost and retried",
         TIMED, given=[started("a")], when=LEASE_1,
         events=[("TimerFired", {"timer_id": "lease:a:1"}),
                 ("TaskFailed", {"error_type": "HeartbeatTimeout",
                                 "error": has("lost", "worker-1", "5 s")}),
                 ("TimerScheduled", {"attempt": 2})],
         state={"tasks.a.outcome": "lost"}),
    Case("a heartbeat renews the lease: the old lease time passes harmlessly",
         TIMED, given=[started("a"), beat(T0 + 4000)], when=LEASE_1, events=[],
         state={"tasks.a.last_seen_ms": T0 + 4000}),
    Case("progress renews the lease as well",
         TIMED, given=[started("a"),
                       ev.TaskProgressed(WF, "a", None, 1, T0 + 4000, 0.5, "half")],
         when=LEASE_1, events=[]),
    Case("a heartbeat is recorded (the lease is part of the state)",
         TIMED, given=[started("a")], when=beat(T0 + 100),
         events=[("TaskHeartbeated", {"at_ms": T0 + 100})],
         state={"tasks.a.last_seen_ms": T0 + 100}),
    Case("a heartbeat of a finished attempt records nothing",
         TIMED, given=[started("a"), DEADLINE_1], when=beat(T0 + 2100), events=[]),
    Case("a lease needs a start: a queued attempt is not lost (the queue redelivers it)",
         TIMED, given=[], when=fired("lease:a:1", T0 + 60_000), events=[]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_timeouts_table(case: Case) -> None:
    check_case(case)


def test_dispatch_carries_the_deadline_and_heartbeat_timeout() -> None:
    result = run([submit(TIMED)])
    (dispatch,) = result.bodies(ev.TaskDispatched)
    assert (dispatch.timeout_s, dispatch.heartbeat_timeout_s) == (2.0, 5.0)
    assert dispatch.deadline_ms == T0 + 2000


def test_default_heartbeat_timeout_is_30_s_and_flow_defaults_apply() -> None:
    result = run([submit(spec(task("a")))])
    assert result.bodies(ev.TaskDispatched)[0].heartbeat_timeout_s == 30.0
    flow = spec(task("a"), task("b", timeout=9), timeout=4, heartbeat_timeout=7)
    dispatches = run([submit(flow)]).bodies(ev.TaskDispatched)
    assert [(d.timeout_s, d.heartbeat_timeout_s) for d in dispatches] == [(4, 7), (9, 7)]


def test_task_timers_follow_the_state() -> None:
    result = run([submit(TIMED)])
    assert result.state is not None
    t = result.state.tasks["a"]
    assert task_timers(t, "a") == [("deadline:a:1", T0 + 2000)]
    after = run([started("a"), beat(T0 + 700)], result.state)
    assert after.state is not None
    assert task_timers(after.state.tasks["a"], "a") == [
        ("deadline:a:1", T0 + 2000), ("lease:a:1", T0 + 5700)]
    done = run([ok("a")], after.state)
    assert done.state is not None
    assert task_timers(done.state.tasks["a"], "a") == []


def test_a_lost_attempt_counts_against_max_attempts() -> None:
    lost_twice = run([submit(TIMED), started("a"), LEASE_1, fired("retry:a:2", T0 + 7000),
                      started("a", attempt=2, at=T0 + 7001),
                      fired("lease:a:2", T0 + 12_001)])
    assert lost_twice.state is not None
    assert lost_twice.state.status.value == "failed"
    assert [d.attempt for d in lost_twice.bodies(ev.TaskDispatched)] == [1, 2]
    assert lost_twice.state.timers == {}


@pytest.mark.parametrize("timer_id", ["deadline:a:²", "lease:a:٣", "deadline:a:1²", "lease:a:"])
def test_a_timer_id_whose_attempt_is_not_ascii_digits_changes_nothing(timer_id: str) -> None:
    """``"²".isdigit()`` holds and ``int("²")`` raises: the step used to raise (found by
    the fuzzer), and ``"٣"`` was read as attempt 3."""
    from headwater.core.ids import parse_task_timer_id
    from headwater.core.machine import step

    assert parse_task_timer_id(timer_id) is None
    state = run([submit(TIMED), started("a")]).state
    assert step(state, fired(timer_id, T0 + 60_000)).events == []
