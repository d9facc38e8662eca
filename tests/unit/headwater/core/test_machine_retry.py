"""State-machine tables: retries, backoff timers and fencing of stale reports."""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import (
    T0,
    Case,
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
from headwater.core.retry import RetryPolicy, backoff_seconds

RETRY3 = {"max_attempts": 3, "backoff_base": 1, "backoff_max": 10, "multiplier": 2}
ONE = spec(task("a", retry=RETRY3), task("b", "a"))

# a fails at +100 (retry in 1 s), +1200 (retry in 2 s) and +3300.
FAIL_1 = fail("a", attempt=1, at=T0 + 100)
FIRE_2 = fired("retry:a:2", T0 + 1100)
FAIL_2 = fail("a", attempt=2, at=T0 + 1200)
FIRE_3 = fired("retry:a:3", T0 + 3200)
FAIL_3 = fail("a", attempt=3, at=T0 + 3300)

MAP_RETRY = spec(map_node("m", "${input.xs}", max_concurrency=1,
                          retry={"max_attempts": 2, "backoff_base": 0.25}))

CASES = [
    Case(
        "attempt 1 fails: a timer for attempt 2, after backoff_base",
        ONE, given=[], when=FAIL_1,
        events=[("TaskFailed", {"attempt": 1, "error": "boom"}),
                ("TimerScheduled", {"timer_id": "retry:a:2", "node": "a", "index": None,
                                    "attempt": 2, "fire_at_ms": T0 + 1100, "at_ms": T0 + 100})],
        state={"tasks.a.status": "retry_wait", "tasks.a.attempt": 1,
               "timers.retry:a:2.fire_at_ms": T0 + 1100, "nodes.a.status": "running"},
    ),
    Case(
        "the timer fires: attempt 2 is dispatched and the timer is gone",
        ONE, given=[FAIL_1], when=FIRE_2,
        events=[("TimerFired", {"timer_id": "retry:a:2"}),
                ("TaskDispatched", {"node": "a", "attempt": 2, "at_ms": T0 + 1100})],
        state={"timers": {}, "tasks.a.attempt": 2, "tasks.a.status": "dispatched"},
    ),
    Case(
        "a firing before the timer is due (forged, or from a clock behind) changes nothing",
        ONE, given=[FAIL_1], when=fired("retry:a:2", T0 + 1099),
        events=[],
        state={"timers.retry:a:2.fire_at_ms": T0 + 1100, "tasks.a.status": "retry_wait"},
    ),
    Case(
        "attempt 2 fails: the delay doubles",
        ONE, given=[FAIL_1, FIRE_2], when=FAIL_2,
        events=[("TaskFailed", {"attempt": 2}),
                ("TimerScheduled", {"timer_id": "retry:a:3", "attempt": 3,
                                    "fire_at_ms": T0 + 3200})],
    ),
    Case(
        "attempt 3 of 3 fails: node failed, downstream upstream_failed, workflow failed",
        ONE, given=[FAIL_1, FIRE_2, FAIL_2, FIRE_3], when=FAIL_3,
        events=[("TaskFailed", {"attempt": 3}),
                ("NodeFinished", {"node": "a", "status": "failed",
                                  "error": has("a failed after 3 attempts", "boom")}),
                ("NodeFinished", {"node": "b", "status": "upstream_failed"}),
                ("WorkflowFailed", {"error": has("after 3 attempts")})],
        state={"status": "failed", "timers": {}, "tasks.a.status": "failed",
               "nodes.b.status": "upstream_failed", "open_nodes": 0},
    ),
    Case(
        "non-retryable failure fails at once despite max_attempts 3",
        ONE, given=[started("a")], when=fail("a", retryable=False, error="bad input"),
        events=[("TaskFailed", {"retryable": False}),
                ("NodeFinished", {"node": "a", "status": "failed",
                                  "error": has("after 1 attempt:", "bad input")}),
                ("NodeFinished", {"node": "b", "status": "upstream_failed"}),
                ("WorkflowFailed", {})],
        state={"status": "failed", "timers": {}},
    ),
    Case(
        "default policy (max_attempts 1): the first failure is final",
        spec(task("a")), given=[], when=fail("a"),
        events=[("TaskFailed", {}), ("NodeFinished", {"status": "failed"}),
                ("WorkflowFailed", {})],
    ),
    # -- fencing: reports that must change nothing --------------------------------------
    Case("attempt 1's late success after attempt 2 was dispatched: recorded as discarded",
         ONE, given=[FAIL_1, FIRE_2], when=ok("a", "late", attempt=1),
         events=[("ReportDiscarded", {"attempt": 1, "report": "TaskSucceeded",
                                      "reason": has("superseded by attempt 2")})],
         state={"tasks.a.attempt": 2, "tasks.a.status": "dispatched", "outputs": {}}),
    Case("attempt 1's late start after attempt 2 was dispatched",
         ONE, given=[FAIL_1, FIRE_2], when=started("a", attempt=1), events=[]),
    Case("a report for a future attempt", ONE, given=[], when=ok("a", attempt=2), events=[]),
    Case("attempt 1's duplicate failure while its retry waits",
         ONE, given=[FAIL_1], when=FAIL_1, events=[],
         state={"tasks.a.status": "retry_wait"}),
    Case("attempt 1's late success while its retry waits",
         ONE, given=[FAIL_1], when=ok("a", attempt=1), events=[]),
    Case("a report for an unknown node", ONE, given=[], when=ok("zzz"), events=[]),
    Case("a report for an unknown map index", ONE, given=[], when=ok("a", index=4), events=[]),
    Case("a report for a node not dispatched yet", ONE, given=[], when=ok("b"), events=[]),
    Case("a failure for a task that already succeeded",
         ONE, given=[ok("a")], when=fail("a"), events=[], state={"tasks.a.status": "succeeded"}),
    Case("a report for a finished workflow",
         ONE, given=[ok("a"), ok("b")], when=fail("b"), events=[], state={"status": "succeeded"}),
    Case("a TimerFired for an unknown timer", ONE, given=[FAIL_1],
         when=fired("retry:a:9", T0 + 5000), events=[], state={"tasks.a.status": "retry_wait"}),
    Case("the same timer firing twice", ONE, given=[FAIL_1, FIRE_2], when=FIRE_2, events=[]),
    # -- retries of map children keep their slot ----------------------------------------
    Case(
        "a map child's failure keeps its slot: no next item while it waits",
        MAP_RETRY, input={"xs": [1, 2]}, given=[], when=fail("m", index=0, at=T0 + 10),
        events=[("TaskFailed", {"index": 0}),
                ("TimerScheduled", {"timer_id": "retry:m[0]:2", "index": 0, "attempt": 2,
                                    "fire_at_ms": T0 + 260})],
        state={"nodes.m.running": 1, "nodes.m.next_index": 1},
    ),
    Case(
        "a map child's retry succeeds: the next item goes out",
        MAP_RETRY, input={"xs": [1, 2]},
        given=[fail("m", index=0, at=T0 + 10), fired("retry:m[0]:2", T0 + 260)],
        when=ok("m", "one", index=0, attempt=2, at=T0 + 300),
        events=[("TaskSucceeded", {"index": 0, "attempt": 2}),
                ("TaskDispatched", {"index": 1, "attempt": 1, "input": {"item": 2, "i": 1}})],
        state={"nodes.m.running": 1, "nodes.m.results": ["one", None]},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_retry_table(case: Case) -> None:
    check_case(case)


def test_retries_exhausted_dispatches_exactly_max_attempts_with_timers_between() -> None:
    result = run([submit(ONE), FAIL_1, FIRE_2, FAIL_2, FIRE_3, FAIL_3])
    assert [d.attempt for d in result.bodies(ev.TaskDispatched)] == [1, 2, 3]
    assert result.types == [
        "WorkflowAccepted", "TaskDispatched",
        "TaskFailed", "TimerScheduled", "TimerFired", "TaskDispatched",
        "TaskFailed", "TimerScheduled", "TimerFired", "TaskDispatched",
        "TaskFailed", "NodeFinished", "NodeFinished", "WorkflowFailed",
    ]
    assert result.state is not None and result.state.timers == {}


def _first_delay_ms(retry: dict[str, Any], wf: str) -> int:
    doc = spec(task("a", retry=retry))
    result = run([submit(doc, wf=wf), fail("a", at=T0 + 777, wf=wf)])
    (timer,) = result.bodies(ev.TimerScheduled)
    assert timer.at_ms == T0 + 777
    return int(timer.fire_at_ms - timer.at_ms)


JITTERED = {"max_attempts": 2, "backoff_base": 2, "backoff_max": 100, "multiplier": 3,
            "jitter": 0.5}


@pytest.mark.parametrize("wf", ["wf-1", "wf-2", "wf-üñï", "x" * 60])
def test_timer_delay_is_the_policy_delay_deterministic_and_within_jitter_bounds(wf: str) -> None:
    policy = RetryPolicy(2, 2.0, 100.0, 3.0, 0.5)
    expected = round(backoff_seconds(policy, 1, f"{wf}/a/1") * 1000)
    delay = _first_delay_ms(JITTERED, wf)
    assert delay == expected
    assert _first_delay_ms(JITTERED, wf) == delay  # same dispatch id, same delay
    assert 1000 <= delay <= 3000  # 2 s spread by +-50%


def test_timer_delay_is_capped_by_backoff_max() -> None:
    retry = {"max_attempts": 2, "backoff_base": 5, "backoff_max": 5, "jitter": 1.0}
    assert 0 <= _first_delay_ms(retry, "wf-cap") <= 5000


def test_huge_but_valid_backoff_does_not_make_step_raise() -> None:
    retry = {"max_attempts": 2, "backoff_base": 1e308, "backoff_max": 1e308}
    doc = spec(task("a", retry=retry))
    result = run([submit(doc), fail("a")])
    assert result.types[-1] in ("TimerScheduled", "WorkflowFailed")


def test_a_redelivered_start_of_a_running_attempt_records_nothing() -> None:
    doc = spec(task("a"))
    first = run([submit(doc), started("a")])
    assert first.state is not None
    again = run([started("a")], first.state)
    assert again.history == []
