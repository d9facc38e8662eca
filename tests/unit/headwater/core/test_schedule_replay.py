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
