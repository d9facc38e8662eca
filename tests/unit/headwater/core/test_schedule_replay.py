"""A schedule's fire times are recorded, never recomputed on replay.

The fire time a schedule arms is in its ``ScheduleArmed`` event (``fire_ms``) and each
fire time that came due in its ``ScheduleFired`` (``fire_ms``); ``evolve`` folds those
numbers. croniter and the time zone database are asked only when a fire time is decided
(the step that records it), so upgrading either under a running schedule changes the
fire times decided after the upgrade, never those already recorded, and a replay of a
recorded history folds the same state whatever croniter would say now.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from machine_harness import T0, WF, fired, replay, run, snapshot, submit

from headwater.core import events as ev
from headwater.core.kinds.schedule import cron, rules
from headwater.core.state import WorkflowStatus

KID = {"name": "kid", "nodes": [{"id": "x", "task": "t.x", "input": "${input}"}]}
SPEC = {"name": "schedule:every-2s", "nodes": [
    {"id": "fire", "kind": "schedule", "cron": "* * * * * */2", "workflow": KID,
     "input": {"q": 1}}]}


class _Otherwise:
    """A croniter that answers otherwise (every fire time 7 s later): what an upgrade
    that changed its mind would do. Parsing a spec still probes it (the expression must
    fire at all), so it answers, just not what the history recorded."""

    def __init__(self, expression: str, start: datetime) -> None:
        self.start = start

    def get_next(self, kind: type) -> datetime:
        return self.start + timedelta(seconds=9)

    def get_prev(self, kind: type) -> datetime:
        return self.start - timedelta(seconds=9)

    @staticmethod
    def is_valid(expression: str) -> bool:
        return True


class _Refuses(_Otherwise):
    """A croniter that refuses every expression: an upgrade that dropped a syntax."""

    def __init__(self, expression: str, start: datetime) -> None:
        raise ValueError(f"not a cron expression: {expression}")

    @staticmethod
    def is_valid(expression: str) -> bool:
        return False


def _no_zone(name: str) -> None:
    raise cron.ZoneInfoNotFoundError(name)


def test_replay_folds_the_recorded_fire_times_whatever_croniter_says_now(
        monkeypatch: pytest.MonkeyPatch) -> None:
    history = run([submit(SPEC), fired("schedule:fire", T0 + 2_000),
                   fired("schedule:fire", T0 + 9_000)])
    armed = [e.body.fire_ms for e in history.history if isinstance(e.body, ev.ScheduleArmed)]
    assert armed == [T0 + 2_000, T0 + 4_000, T0 + 10_000]
    monkeypatch.setattr(cron, "_croniter", lambda: _Otherwise)
    state = replay(history.history)
    assert snapshot(state) == snapshot(history.state)
    assert state is not None and state.nodes["fire"].next_fire_ms == T0 + 10_000
    assert state.workflow_id == WF
    # the same croniter, stepped live, would decide other times: the fold did not ask it
    live = run([submit(SPEC)])
    assert live.state is not None and live.state.nodes["fire"].next_fire_ms == T0 + 9_000


def test_a_croniter_that_answers_otherwise_changes_no_recorded_fire_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    history = run([submit(SPEC), fired("schedule:fire", T0 + 2_000)])
    monkeypatch.setattr(rules, "next_fire_ms", lambda spec, after_ms: after_ms + 1)
    monkeypatch.setattr(rules, "due_fire_times", lambda spec, first_ms, now_ms: [now_ms])
    assert snapshot(replay(history.history)) == snapshot(history.state)


def test_an_accepted_schedule_folds_the_same_after_croniter_and_tzdata_refuse_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    paris = {"name": "schedule:paris", "nodes": [{**SPEC["nodes"][0], "timezone": "Europe/Paris"}]}
    history = run([submit(paris), fired("schedule:fire", T0 + 2_000)])
    assert history.state is not None and history.state.status is WorkflowStatus.RUNNING
    monkeypatch.setattr(cron, "_croniter", lambda: _Refuses)
    monkeypatch.setattr(cron, "ZoneInfo", _no_zone)
    state = replay(history.history)
    assert state is not None and state.spec_error == ""
    assert snapshot(state) == snapshot(history.state)
    # and stepped on, it arms nothing it cannot compute, and fails nothing
    after = run([fired("schedule:fire", T0 + 4_000)], state)
    assert after.state is not None and after.state.status is WorkflowStatus.RUNNING
    assert not [e for e in after.history if isinstance(e.body, ev.ScheduleArmed)]


@pytest.mark.parametrize(("field", "value", "fault"), [
    ("cron", "61 * * * *", "cron: required, a cron expression"),
    ("cron", "0 0 30 2 *", "never fires"),
    ("timezone", "Mars/Olympus", "'Mars/Olympus' is not an IANA time zone"),
    ("timezone", "Europe", "'Europe' is not an IANA time zone"),  # a folder: OSError
    ("timezone", "x" * 300, "is not an IANA time zone"),
])
def test_a_submission_croniter_or_tzdata_refuses_fails_when_accepted(
        field: str, value: str, fault: str) -> None:
    """A submission straight from Kafka (no gateway to refuse it): the coordinator asks
    croniter and the zone database once, when it accepts it, and records the failure."""
    doc = {"name": "schedule:bad", "nodes": [{**SPEC["nodes"][0], field: value}]}
    out = run([submit(doc)])
    assert out.state is not None and out.state.status is WorkflowStatus.FAILED
    failed = [e.body for e in out.history if isinstance(e.body, ev.WorkflowFailed)]
    assert len(failed) == 1 and fault in failed[0].error
    assert failed[0].error.startswith("invalid spec: ")
    assert snapshot(replay(out.history)) == snapshot(out.state)
