"""The retry policy through the state machine: the issue's worked examples."""

from __future__ import annotations

from machine_harness import T0, check_history, fail, fired, ok, run, spec, submit, task

from headwater.core import events as ev
from headwater.core.machine import step
from headwater.core.state import WorkflowState, task_timers

B_IDS = ["b1", "b2", "b3", "b4", "b5"]
FLAKY_RETRY = {"max_attempts": 3, "backoff_base": 0.5, "backoff_max": 4, "jitter": 0.2}
FAN_IN = spec(*(task(b, retry=FLAKY_RETRY) for b in B_IDS),
              task("d", *B_IDS, input=[f"${{nodes.{b}.output}}" for b in B_IDS]))


def _fire_pending(state: WorkflowState) -> list[ev.TimerFired]:
    return [fired(timer_id, t.fire_at_ms) for timer_id, t in sorted(state.timers.items())]


def test_b2_and_b4_fail_twice_then_succeed_and_d_runs_once_with_results_in_order() -> None:
    inputs: list[ev.Input] = [submit(FAN_IN)]
    for round_ in (1, 2):  # b2 and b4 fail; their retry timers fire
        inputs += [fail(b, attempt=round_, at=T0 + round_ * 10_000) for b in ("b2", "b4")]
        waiting = run(inputs).state
        assert waiting is not None
        inputs += _fire_pending(waiting)
    # the successful attempts complete in reverse declared order
    inputs += [ok(b, f"{b.upper()}@{3 if b in ('b2', 'b4') else 1}",
                  attempt=3 if b in ("b2", "b4") else 1, at=T0 + 30_000)
               for b in reversed(B_IDS)]
    final = run(inputs)
    assert final.state is not None
    check_history(final.history, final.state)
    d_dispatches = [d for d in final.bodies(ev.TaskDispatched) if d.node == "d"]
    assert len(d_dispatches) == 1
    assert d_dispatches[0].input == ["B1@1", "B2@3", "B3@1", "B4@3", "B5@1"]
    attempts = {b: [d.attempt for d in final.bodies(ev.TaskDispatched) if d.node == b]
                for b in B_IDS}
    assert attempts == {"b1": [1], "b2": [1, 2, 3], "b3": [1], "b4": [1, 2, 3], "b5": [1]}
    done = run([ok("d", "D", at=T0 + 40_000)], final.state)
    assert done.types[-1] == "WorkflowSucceeded"


def test_a_thousand_retries_with_base_300_s_and_cap_3600_s() -> None:
    retry = {"max_attempts": 1001, "backoff_base": 300, "backoff_max": 3600,
             "multiplier": 2, "jitter": 0.25}
    state = step(None, submit(spec(task("a", retry=retry)))).state
    now = T0
    delays_ms: list[int] = []
    dispatched = 1
    for attempt in range(1, 1002):
        now += 1000
        out = step(state, fail("a", attempt=attempt, at=now))
        state = out.state
        assert state is not None
        timers = [e.body for e in out.events if isinstance(e.body, ev.TimerScheduled)]
        if attempt == 1001:
            assert timers == []
            break
        (timer,) = timers
        delays_ms.append(timer.fire_at_ms - timer.at_ms)
        now = timer.fire_at_ms
        fired_out = step(state, fired(timer.timer_id, now))
        state = fired_out.state
        dispatched += sum(isinstance(e.body, ev.TaskDispatched) for e in fired_out.events)
    assert state is not None
    assert dispatched == 1001
    assert len(delays_ms) == 1000
    assert max(delays_ms) <= 3_600_000
    assert min(delays_ms) >= 300_000 * 0.75
    assert delays_ms[-1] <= 3_600_000 and delays_ms[-1] >= 3_600_000 * 0.75
    assert state.status.value == "failed"
    assert "after 1001 attempts" in state.error


def test_the_workflow_fails_when_the_last_attempt_fails_with_no_timer_pending() -> None:
    retry = {"max_attempts": 2, "backoff_base": 1}
    doc = spec(task("a", retry=retry, timeout=60))
    head = run([submit(doc), fail("a", at=T0 + 10), fired("retry:a:2", T0 + 1010)])
    last = run([fail("a", attempt=2, at=T0 + 1500)], head.state)
    assert last.types[-1] == "WorkflowFailed"
    assert last.history[-1].body.at_ms == T0 + 1500  # at the moment of the last failure
    assert last.state is not None
    assert last.state.timers == {}
    assert all(task_timers(t, k) == [] for k, t in last.state.tasks.items())
