"""State-machine tables: a run's ``deadline`` (recorded at acceptance, fired by its own
timer, failing the run with ``DeadlineExceeded``), and how the spec takes it."""

from __future__ import annotations

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    check_case,
    check_history,
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
from headwater.core.deadline import RUN_DEADLINE_TIMER, RunDeadline, parse_deadline
from headwater.core.instants import parse_instant
from headwater.core.machine import step
from headwater.core.spec import parse_spec
from headwater.errors import SpecError

CHILD = {"name": "c", "nodes": [{"id": "x", "task": "t.x"}]}
TIMED = spec(task("a"), {"id": "w", "kind": "workflow", "workflow": CHILD},
             task("b", "a"), deadline="30s")
DUE = T0 + 30_000


@pytest.mark.parametrize(("value", "want"), [
    (3600, RunDeadline(after_ms=3_600_000)), (0.5, RunDeadline(after_ms=500)),
    ("30s", RunDeadline(after_ms=30_000)), ("15m", RunDeadline(after_ms=900_000)),
    ("12h", RunDeadline(after_ms=43_200_000)), ("7d", RunDeadline(after_ms=604_800_000)),
    ("2026-12-31T23:00:00Z", RunDeadline(at_ms=parse_instant("2026-12-31T23:00:00Z"))),
    ("2026-12-31T23:00:00+02:00",
     RunDeadline(at_ms=parse_instant("2026-12-31T21:00:00Z"))),
])
def test_a_deadline_is_a_span_or_an_instant(value: object, want: RunDeadline) -> None:
    faults: list[str] = []
    assert parse_deadline({"deadline": value}, faults) == want
    assert faults == []
    assert parse_spec(spec(task("a"), deadline=value)).deadline == want


@pytest.mark.parametrize(("value", "fault"), [
    (0, "deadline: a deadline must be from 1 ms"), (-5, "deadline: a deadline must be from"),
    (True, "deadline: a deadline is seconds"), ("soon", "deadline: a deadline is seconds"),
    ("2026-13-01T00:00:00Z", "is no instant"), ("2026-12-31T23:00:00", "is no instant"),
    (float("inf"), "must be finite"), ({"s": 1}, "deadline: a deadline is seconds"),
    (1e308, "must be finite"), ("9" * 400 + "s", "must be finite"), (10**400, "must be finite"),
    ("400d", "from 1 ms to 365 days"),
])
def test_a_bad_deadline_is_a_spec_fault_naming_it(value: object, fault: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse_spec(spec(task("a"), deadline=value))
    assert any(fault in f and f.startswith("deadline:") for f in raised.value.faults), (
        raised.value.faults)


def test_the_top_level_timeout_stays_a_default_for_each_attempt() -> None:
    parsed = parse_spec(spec(task("a"), timeout=5, deadline=60))
    assert parsed.node("a").timeout == 5.0
    assert parsed.deadline == RunDeadline(after_ms=60_000)


def _deadline_cancel(node: str) -> tuple[str, dict[str, object]]:
    return ("TaskCancelled", {"node": node, "reason": has("DeadlineExceeded")})


CASES = [
    Case("a run with a deadline records it right after its acceptance",
         spec(task("a"), deadline=3600), given=[], when=ev.CancelRequested(WF, T0 + 1),
         events=[("TaskCancelled", {"node": "a", "reason": "cancel requested"}),
                 ("NodeFinished", {"node": "a", "status": "cancelled"}),
                 ("WorkflowCancelled", {})],
         state={"deadline_at_ms": T0 + 3_600_000}),
    Case("the deadline fails the run: its attempts, its child and its nodes cancelled",
         TIMED, given=[started("a"), started("w", at=T0 + 60)],
         when=fired(RUN_DEADLINE_TIMER, DUE),
         events=[("TimerFired", {"timer_id": RUN_DEADLINE_TIMER}),
                 _deadline_cancel("a"), _deadline_cancel("w"),
                 ("NodeFinished", {"node": "a", "status": "cancelled"}),
                 ("NodeFinished", {"node": "w", "status": "cancelled"}),
                 ("NodeFinished", {"node": "b", "status": "cancelled"}),
                 ("WorkflowFailed", {"error": has("DeadlineExceeded",
                                                  "1970-01-01T00:17:10.000Z",
                                                  "30 s after its start")})],
         state={"status": "failed", "error": has("DeadlineExceeded"),
                "tasks.a.status": "cancelled", "tasks.w.status": "cancelled"}),
    Case("an early firing changes nothing", TIMED, given=[started("a")],
         when=fired(RUN_DEADLINE_TIMER, DUE - 1), events=[], state={"status": "running"}),
    Case("a firing after the run ended changes nothing", spec(task("a"), deadline=30),
         given=[started("a"), ok("a", "A", at=T0 + 100)],
         when=fired(RUN_DEADLINE_TIMER, DUE), events=[], state={"status": "succeeded"}),
    Case("a run without a deadline takes no deadline firing", spec(task("a")),
         given=[started("a")], when=fired(RUN_DEADLINE_TIMER, DUE), events=[],
         state={"status": "running", "deadline_at_ms": None}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_deadline_table(case: Case) -> None:
    check_case(case)


def test_the_deadline_is_recorded_after_acceptance_and_before_the_first_dispatch() -> None:
    result = step(None, submit(TIMED))
    assert [e.type for e in result.events][:3] == ["WorkflowAccepted", "DeadlineSet",
                                                   "TaskDispatched"]
    assert result.events[1].body == ev.DeadlineSet(WF, DUE, T0)


def test_an_instant_already_passed_fails_the_run_before_any_node_starts() -> None:
    result = run([submit(spec(task("a"), deadline="1970-01-01T00:00:01Z"))])
    assert [type(b).__name__ for b in (e.body for e in result.history)] == [
        "WorkflowAccepted", "DeadlineSet", "NodeFinished", "WorkflowFailed"]
    assert result.state is not None and result.state.status.value == "failed"
    assert result.state.error.startswith("DeadlineExceeded: the run's deadline "
                                         "1970-01-01T00:00:01.000Z passed")
    check_history(result.history, result.state)


def test_a_cancel_waiting_for_its_submission_still_ends_the_run_cancelled() -> None:
    from headwater.core.machine import start

    result = start(submit(TIMED), [ev.CancelRequested(WF, T0 - 5)])
    assert [e.type for e in result.events][-1] == "WorkflowCancelled"


def test_a_restart_keeps_the_deadline_of_the_run() -> None:
    doc = spec(task("a", heartbeat_timeout=5), restart_on_failure=True, deadline=60)
    result = run([submit(doc), started("a"), fired("lease:a:1", T0 + 50 + 5000)])
    assert result.state is not None and result.state.generation == 2
    assert result.state.deadline_at_ms == T0 + 60_000
    after = run([submit(doc), started("a"), fired("lease:a:1", T0 + 50 + 5000),
                 fired(RUN_DEADLINE_TIMER, T0 + 60_000)])
    assert after.state is not None and after.state.status.value == "failed"
    assert "DeadlineExceeded" in after.state.error
    check_history(after.history, after.state)


def test_a_map_past_its_deadline_cancels_every_item_in_flight() -> None:
    doc = spec(map_node("m", "${input.xs}"), deadline=10)
    result = run([submit(doc, {"xs": [1, 2, 3]}), started("m", index=0),
                  fired(RUN_DEADLINE_TIMER, T0 + 10_000)])
    cancelled = [(b.node, b.index) for b in result.bodies(ev.TaskCancelled)]
    assert cancelled == [("m", 0), ("m", 1), ("m", 2)]
    assert result.state is not None and result.state.status.value == "failed"
    check_history(result.history, result.state)
