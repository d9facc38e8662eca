"""What a schedule's history writes to ``schedules``: the statements ``plan`` picks (the
SQL runs on PostgreSQL in ``tests/e2e/test_schedules_core.py``)."""

from __future__ import annotations

from datetime import UTC, datetime

from headwater.core import events as ev
from services.projector import schedules as sc
from services.projector.writer import STATEMENTS, plan

WF, T = "schedule:nightly:2", 1_800_000_000_000
KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x"}]}
SPEC = {"name": "schedule:nightly", "nodes": [
    {"id": "fire", "kind": "schedule", "cron": "*/5 * * * *", "timezone": "Europe/Paris",
     "workflow": KID, "definition": "billing", "definition_version": 3, "overlap": "allow"}]}


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def ours(body: ev.Body, seq: int = 5) -> list[tuple[str, tuple[object, ...]]]:
    return [(s, a) for s, a in plan(ev.HistoryEvent(WF, seq, body))
            if s in sc.SCHEDULE_STATEMENTS]


def test_the_acceptance_of_a_schedule_inserts_its_row() -> None:
    body = ev.WorkflowAccepted(WF, T, SPEC, None, None)
    assert ours(body, 1) == [(sc.INSERT_SCHEDULE, (
        WF, "nightly", "*/5 * * * *", "Europe/Paris", "billing", 3, "allow", "none", at(T)))]


def test_another_workflow_writes_no_schedule_row() -> None:
    assert ours(ev.WorkflowAccepted(WF, T, KID, None, None), 1) == []
    # an end updates the row only where there is one (a schedule's)
    assert ours(ev.WorkflowSucceeded(WF, T, None)) == [(sc.SCHEDULE_ENDED, (WF, "succeeded"))]


def test_fire_times_count_as_fired_or_skipped() -> None:
    assert ours(ev.ScheduleFired(WF, "fire", T + 9, T, "started", f"{WF}:fire.0:1"), 7) == [
        (sc.SCHEDULE_FIRED, (WF, 7, at(T), f"{WF}:fire.0:1", 1, 0))]
    assert ours(ev.ScheduleFired(WF, "fire", T + 9, T, "skipped_missed"), 8) == [
        (sc.SCHEDULE_FIRED, (WF, 8, at(T), None, 0, 1))]


def test_arming_pausing_and_the_end() -> None:
    assert ours(ev.ScheduleArmed(WF, "fire", T, T + 300_000), 3) == [
        (sc.SCHEDULE_ARMED, (WF, 3, at(T + 300_000)))]
    assert ours(ev.SchedulePaused(WF, "fire", T), 4) == [(sc.SCHEDULE_PAUSED, (WF, 4, True))]
    assert ours(ev.ScheduleResumed(WF, "fire", T), 6) == [(sc.SCHEDULE_PAUSED, (WF, 6, False))]
    assert ours(ev.WorkflowCancelled(WF, T, "deleted"), 9) == [
        (sc.SCHEDULE_ENDED, (WF, "cancelled"))]


def test_the_row_is_inserted_before_it_is_updated() -> None:
    assert STATEMENTS.index(sc.INSERT_SCHEDULE) < min(
        STATEMENTS.index(s) for s in sc.SCHEDULE_STATEMENTS[1:])
