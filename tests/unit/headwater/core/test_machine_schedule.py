"""State-machine tables: ``schedule`` nodes (given, when, then).

``T0`` (1,000,000 ms) is an even second, so a schedule every 2 s
(``"* * * * * */2"``: croniter's seconds field is the sixth) fires at T0 + 2000, T0 + 4000
and so on. Each run is a child attempt: task ``fire[k]``, attempt 1, child id
``wf-1:fire.k:1``.
"""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    cancel,
    check_case,
    fired,
    has,
    replay,
    run,
    snapshot,
    submit,
)

from headwater.core import events as ev
from headwater.core.kinds.schedule.cron import ScheduleSpec
from headwater.core.kinds.schedule.rules import cancels_run, plan
from headwater.core.signals import signal_fault

KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x", "input": "${input}"}]}
EVERY_2S = "* * * * * */2"
TIMER = "schedule:fire"


def schedule(**fields: Any) -> dict[str, Any]:
    node = {"id": "fire", "kind": "schedule", "cron": EVERY_2S, "workflow": KID,
            "input": {"q": 1}, **fields}
    return {"name": "schedule:nightly", "nodes": [node]}


def run_id(k: int) -> str:
    return f"{WF}:fire.{k}:1"


def run_ok(k: int, at: int) -> ev.TaskSucceeded:
    return ev.TaskSucceeded(WF, "fire", k, 1, at, {"run": k})


def run_failed(k: int, at: int) -> ev.TaskFailed:
    return ev.TaskFailed(WF, "fire", k, 1, at, "child failed", "ChildWorkflowFailed", True)


def signal(name: str, at: int, signal_id: str = "", fields: Any = None) -> ev.SignalSent:
    return ev.SignalSent(WF, name, at, None, signal_id, fields)


def started_fire(fire_ms: int, k: int) -> list[tuple[str, dict[str, Any]]]:
    return [("ScheduleFired", {"fire_ms": fire_ms, "outcome": "started", "run_id": run_id(k)}),
            ("TaskDispatched", {"node": "fire", "index": k, "attempt": 1, "task": "workflow",
                                "input": {"q": 1}})]


def armed(fire_ms: int) -> tuple[str, dict[str, Any]]:
    return ("ScheduleArmed", {"node": "fire", "fire_ms": fire_ms})


def skipped(fire_ms: int, outcome: str) -> tuple[str, dict[str, Any]]:
    return ("ScheduleFired", {"fire_ms": fire_ms, "outcome": outcome, "run_id": None})


FIRST = fired(TIMER, T0 + 2000)
CASES = [
    Case("the schedule arms its first fire time after its acceptance",
         schedule(), given=[], when=submit(schedule()), submit=False,
         events=[("WorkflowAccepted", {}), armed(T0 + 2000)],
         state={"nodes.fire.status": "running", "nodes.fire.next_fire_ms": T0 + 2000,
                f"timers.{TIMER}.fire_at_ms": T0 + 2000, "open_nodes": 1}),
    Case("start_at: the first fire time after it",
         schedule(start_at="1970-01-01T00:20:00Z"), given=[],
         when=submit(schedule(start_at="1970-01-01T00:20:00Z")), submit=False,
         events=[("WorkflowAccepted", {}), armed(1_200_000 + 2000)]),
    Case("an early firing changes nothing",
         schedule(), given=[], when=fired(TIMER, T0 + 1999), events=[]),
    Case("the fire time starts run 0 (a child attempt) and arms the next",
         schedule(), given=[], when=FIRST,
         events=[("TimerFired", {}), *started_fire(T0 + 2000, 0), armed(T0 + 4000)],
         state={"tasks.fire[0].status": "dispatched", "nodes.fire.next_index": 1,
                "nodes.fire.last_fire_ms": T0 + 2000, "nodes.fire.next_fire_ms": T0 + 4000}),
    Case("overlap skip: a run still running skips the fire time",
         schedule(), given=[FIRST], when=fired(TIMER, T0 + 4000),
         events=[("TimerFired", {}), skipped(T0 + 4000, "skipped_overlap"), armed(T0 + 6000)],
         state={"nodes.fire.next_index": 1}),
    Case("overlap skip: a run that has ended does not",
         schedule(), given=[FIRST, run_ok(0, T0 + 3000)], when=fired(TIMER, T0 + 4000),
         events=[("TimerFired", {}), *started_fire(T0 + 4000, 1), armed(T0 + 6000)]),
    Case("overlap allow: the next run starts beside the running one",
         schedule(overlap="allow"), given=[FIRST], when=fired(TIMER, T0 + 4000),
         events=[("TimerFired", {}), *started_fire(T0 + 4000, 1), armed(T0 + 6000)],
         state={"tasks.fire[0].status": "dispatched", "tasks.fire[1].status": "dispatched"}),
    Case("overlap cancel_previous: the running run is cancelled, then the next starts",
         schedule(overlap="cancel_previous"), given=[FIRST], when=fired(TIMER, T0 + 4000),
         events=[("TimerFired", {}),
                 ("TaskCancelled", {"index": 0, "reason": has("cancel_previous")}),
                 *started_fire(T0 + 4000, 1), armed(T0 + 6000)],
         state={"tasks.fire[1].status": "dispatched", "nodes.fire.next_index": 2}),
    Case("a run's failure never fails the schedule",
         schedule(), given=[FIRST], when=run_failed(0, T0 + 2500),
         events=[("TaskFailed", {"index": 0})],
         state={"status": "running", "nodes.fire.status": "running", "open_nodes": 1}),
    Case("a run's success changes no output of the schedule",
         schedule(), given=[FIRST], when=run_ok(0, T0 + 2500),
         events=[("TaskSucceeded", {"index": 0})], state={"outputs": {}, "status": "running"}),
    Case("catchup none: fire times missed by more than misfire_grace are skipped",
         schedule(misfire_grace=1), given=[], when=fired(TIMER, T0 + 8500),
         events=[("TimerFired", {}), skipped(T0 + 2000, "skipped_missed"),
                 skipped(T0 + 4000, "skipped_missed"), skipped(T0 + 6000, "skipped_missed"),
                 *started_fire(T0 + 8000, 0), armed(T0 + 10000)]),
    Case("catchup none: within misfire_grace a late timer still runs its fire times",
         schedule(misfire_grace=60, overlap="allow"), given=[], when=fired(TIMER, T0 + 4500),
         events=[("TimerFired", {}), *started_fire(T0 + 2000, 0), *started_fire(T0 + 4000, 1),
                 armed(T0 + 6000)]),
    Case("catchup latest: only the latest missed fire time runs",
         schedule(misfire_grace=1, catchup="latest"), given=[], when=fired(TIMER, T0 + 9500),
         events=[("TimerFired", {}), skipped(T0 + 2000, "skipped_missed"),
                 skipped(T0 + 4000, "skipped_missed"), skipped(T0 + 6000, "skipped_missed"),
                 *started_fire(T0 + 8000, 0), armed(T0 + 10000)]),
    Case("catchup all: each missed fire time runs, oldest first",
         schedule(misfire_grace=1, catchup="all", overlap="allow"), given=[],
         when=fired(TIMER, T0 + 6500),
         events=[("TimerFired", {}), *started_fire(T0 + 2000, 0), *started_fire(T0 + 4000, 1),
                 *started_fire(T0 + 6000, 2), armed(T0 + 8000)]),
    Case("catchup all: at most catchup_max missed ones, the latest; the older are skipped",
         schedule(misfire_grace=1, catchup="all", overlap="allow", catchup_max=2), given=[],
         when=fired(TIMER, T0 + 21500),
         events=[("TimerFired", {}), skipped(T0 + 16000, "skipped_missed"),
                 *started_fire(T0 + 18000, 0), *started_fire(T0 + 20000, 1),
                 armed(T0 + 22000)]),
    Case("pause: recorded once, its signal id kept",
         schedule(), given=[], when=signal("pause", T0 + 100, "p-1"),
         events=[("SchedulePaused", {"node": "fire", "signal_id": "p-1"})],
         state={"nodes.fire.paused": True, "signal_ids": ["p-1"]}),
    Case("a pause while paused records nothing",
         schedule(), given=[signal("pause", T0 + 100)], when=signal("pause", T0 + 200),
         events=[]),
    Case("a repeated signal id changes nothing",
         schedule(), given=[signal("pause", T0 + 100, "p-1"), signal("resume", T0 + 150)],
         when=signal("pause", T0 + 200, "p-1"), events=[]),
    Case("fire times while paused are skipped_paused",
         schedule(), given=[signal("pause", T0 + 100)], when=FIRST,
         events=[("TimerFired", {}), skipped(T0 + 2000, "skipped_paused"), armed(T0 + 4000)],
         state={"nodes.fire.next_index": 0}),
    Case("resume arms the next fire time after now (paused time is not caught up)",
         schedule(catchup="all"), given=[signal("pause", T0 + 100)],
         when=signal("resume", T0 + 7100),
         events=[("ScheduleResumed", {}), armed(T0 + 8000)],
         state={"nodes.fire.paused": False, f"timers.{TIMER}.fire_at_ms": T0 + 8000}),
    Case("a resume while running records nothing",
         schedule(), given=[], when=signal("resume", T0 + 100), events=[]),
    Case("another signal is discarded with its fault",
         schedule(), given=[], when=signal("approval", T0 + 100),
         events=[("SignalDiscarded", {"reason": has("pause and resume")})]),
    Case("a pause with fields is discarded",
         schedule(), given=[], when=signal("pause", T0 + 100, fields={"x": 1}),
         events=[("SignalDiscarded", {"reason": has("no fields")})]),
    Case("a cancel ends the schedule, its running run's attempt cancelled in its history",
         schedule(), given=[FIRST], when=cancel(T0 + 2500),
         events=[("TaskCancelled", {"index": 0}), ("NodeFinished", {"status": "cancelled"}),
                 ("WorkflowCancelled", {})],
         state={"timers": {}}),
    Case("after the cancel its timer changes nothing",
         schedule(), given=[FIRST, cancel(T0 + 2500)], when=fired(TIMER, T0 + 4000),
         events=[]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_schedule_table(case: Case) -> None:
    check_case(case)


def test_a_cancel_of_the_schedule_does_not_cascade_to_its_runs() -> None:
    result = run([submit(schedule()), FIRST, fired(TIMER, T0 + 4000), cancel(T0 + 4500)])
    state = result.state
    assert state is not None and state.status.value == "cancelled"
    cancelled = result.bodies(ev.TaskCancelled)
    assert [c.index for c in cancelled] == [0]
    assert not cancels_run(state, cancelled[0])


def test_a_run_cancelled_by_the_next_fire_time_is_cancelled() -> None:
    result = run([submit(schedule(overlap="cancel_previous")), FIRST,
                  fired(TIMER, T0 + 4000)])
    assert result.state is not None and not result.state.status.terminal
    (cancelled,) = result.bodies(ev.TaskCancelled)
    assert cancels_run(result.state, cancelled)


def test_a_task_node_cancelled_with_its_workflow_still_cascades() -> None:
    doc = {"name": "c", "nodes": [{"id": "c", "kind": "workflow", "workflow": KID}]}
    result = run([submit(doc), cancel(T0 + 100)])
    (cancelled,) = result.bodies(ev.TaskCancelled)
    assert cancels_run(result.state, cancelled)


@pytest.mark.parametrize(("catchup", "runs"), [
    ("none", [False, False, True]), ("latest", [False, False, True]),
    ("all", [True, True, True])])
def test_plan_runs_on_time_fire_times_whatever_the_policy(catchup: str,
                                                          runs: list[bool]) -> None:
    spec = ScheduleSpec(EVERY_2S, catchup=catchup, misfire_grace=1)
    assert plan(spec, [2000, 4000, 6000], 6500) == list(zip([2000, 4000, 6000], runs,
                                                            strict=True))


def test_plan_latest_without_an_on_time_fire_time_runs_the_last_missed() -> None:
    spec = ScheduleSpec(EVERY_2S, catchup="latest", misfire_grace=1)
    assert plan(spec, [2000, 4000], 9000) == [(2000, False), (4000, True)]


def test_signal_fault_takes_pause_and_resume_only_for_a_schedule() -> None:
    """What the gateway's 400 check and the coordinator's dead-lettering ask."""
    state = run([submit(schedule())]).state
    assert state is not None
    assert signal_fault(state, signal("pause", T0)) is None
    assert signal_fault(state, signal("resume", T0, fields={})) is None
    assert "not 'approval'" in (signal_fault(state, signal("approval", T0)) or "")
    assert "no index" in (signal_fault(state, ev.SignalSent(WF, "pause", T0, 0)) or "")
    assert "no fields" in (signal_fault(state, signal("resume", T0, fields={"a": 1})) or "")


def test_ended_runs_leave_the_state() -> None:
    """1,000 fires whose runs end before the next leave no task behind: the state, and
    each fire's scan of the running runs, stay the same size (invariant 7)."""
    inputs: list[ev.Input] = [submit(schedule(overlap="skip"))]
    for k in range(1000):
        fire_at = T0 + 2000 * (k + 1)
        inputs += [fired(TIMER, fire_at), run_ok(k, fire_at + 500)]
    result = run(inputs)
    assert result.state is not None
    assert result.state.nodes["fire"].next_index == 1000
    assert result.state.tasks == {}
    assert len(result.bodies(ev.TaskDispatched)) == 1000
    replayed = replay(result.history)
    assert replayed is not None and snapshot(replayed) == snapshot(result.state)
