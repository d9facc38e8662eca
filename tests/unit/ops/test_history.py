"""Replay: deduplicating a history read from the log, folding it, and its timeline."""

from __future__ import annotations

import dataclasses
import typing

import kind_histories
import pytest
from machine_harness import T0, run
from test_machine_runs import NAMES, _scenario

from headwater.core import events as ev
from headwater.core.wording import short
from ops.history import DESCRIPTIONS, Recorded, dedupe, describe, fold, timeline
from services.coordinator.snapshot import dump_state


def history(name: str) -> list[ev.HistoryEvent]:
    return run(_scenario(name)).history


def recorded(events: list[ev.HistoryEvent]) -> list[Recorded]:
    return [Recorded(e, offset=i, timestamp_ms=e.body.at_ms) for i, e in enumerate(events)]


def test_identical_duplicates_are_dropped_keeping_the_first_and_seq_order() -> None:
    h = history("diamond with duplicate deliveries")
    recs = recorded(h)
    again = [Recorded(r.event, r.offset + 1000) for r in recs]
    events, conflicts = dedupe([*recs[5:], *again, *recs[:5]])
    assert conflicts == []
    assert [r.event for r in events] == h
    assert [r.offset for r in events] == [*(r.offset + 1000 for r in recs[:5]),
                                          *(r.offset for r in recs[5:])]


def test_a_duplicate_seq_with_another_body_is_a_conflict() -> None:
    h = history("retries exhausted")
    forged = ev.HistoryEvent(h[2].workflow_id, h[2].seq,
                             ev.WorkflowCancelled(h[2].workflow_id, T0, "forged"))
    events, conflicts = dedupe([*recorded(h), Recorded(forged, 99)])
    assert [r.event for r in events] == h
    (conflict,) = conflicts
    assert (conflict.seq, conflict.kept.event, conflict.other.offset) == (3, h[2], 99)
    assert "seq 3 recorded twice" in conflict.describe()
    assert "WorkflowCancelled at offset 99" in conflict.describe()


@pytest.mark.parametrize("name", NAMES)
def test_folding_the_history_gives_the_machines_state(name: str) -> None:
    result = run(_scenario(name))
    folded = fold(result.history)
    assert folded.error == ""
    assert folded.state is not None and result.state is not None
    assert dump_state(folded.state) == dump_state(result.state)


def test_fold_stops_after_upto_seq() -> None:
    h = history("map out of order")
    assert fold(h, upto_seq=4).state is not None
    assert fold(h, upto_seq=4).state.seq == 4  # type: ignore[union-attr]
    assert fold(h, upto_seq=0).state is None


def test_a_gap_or_a_missing_beginning_stops_the_fold_with_the_reason() -> None:
    h = history("retries exhausted")
    gap = fold([*h[:3], *h[4:]])
    assert gap.state is not None and gap.state.seq == 3
    assert "seq 5 (" in gap.error and "expected seq 4" in gap.error
    truncated = fold(h[2:])
    assert truncated.state is None
    assert "expected WorkflowAccepted at seq 1" in truncated.error


def test_timeline_names_the_task_attempt_and_what_happened() -> None:
    rows = {(r.type, r.task): r for r in timeline(history("retries exhausted"))}
    assert rows[("WorkflowAccepted", "")].detail == "t tenant tenant-a"
    assert rows[("TaskDispatched", "a/1")].detail == "t.a on cpu"
    assert rows[("TaskFailed", "a/1")].detail == "RuntimeError: boom"
    assert rows[("TimerScheduled", "a/2")].detail.startswith("retry:a:2 in ")
    assert rows[("TimerFired", "")].detail.startswith("retry:a:")
    assert rows[("NodeFinished", "a")].detail.startswith("failed ")
    first = timeline(history("retries exhausted"))[0]
    assert (first.seq, first.at_ms, first.time()) == (1, T0, "1970-01-01 00:16:40.000")


def test_every_history_event_type_has_a_description() -> None:
    assert set(DESCRIPTIONS) == set(typing.get_args(ev.Body))
    for cls in typing.get_args(ev.Body):
        defaults = {f.name: _sample(f.type) for f in dataclasses.fields(cls)}
        assert isinstance(describe(cls(**defaults)), str)


def _sample(annotation: object) -> object:
    text = str(annotation)
    if text.startswith("int"):
        return 1
    if text.startswith("float"):
        return 0.5
    if text.startswith("bool"):
        return True
    return "x"


def test_short_cuts_long_values_and_shows_json() -> None:
    assert short({"a": [1, 2]}) == '{"a":[1,2]}'
    assert short("y" * 200, limit=10) == "y" * 9 + "…"
    assert short(None) == "null"


def test_the_node_kinds_events_say_what_they_wait_for_and_decided() -> None:
    waited, per_item, loop, kid = (kind_histories.waited().history,
                                   kind_histories.per_item().history,
                                   kind_histories.looped().history,
                                   kind_histories.child().history)
    rows = {(r.type, r.task): r.detail for r in timeline([*waited, *per_item, *loop, *kid])}
    assert rows[("WaitStarted", "approve")] == (
        "for signal approval until 1970-01-01T00:17:40.000Z (60 s)")
    assert rows[("WaitStarted", "approve[0]")] == "for signal approval, no timeout"
    sent = [r.detail for r in timeline([*waited, *per_item]) if r.type == "SignalSent"]
    assert sent == ['approval id s1 {"ok":true}', 'approval[1] id early {"ok":true}',
                    'approval[0] id s0 {"ok":true}']
    assert rows[("SignalConsumed", "approve[1]")] == 'took approval[1] id early {"ok":true}'
    assert rows[("SignalDiscarded", "")] == (
        "approval[0] id late: wait approve has already succeeded")
    assert rows[("SleepStarted", "pause")] == "until 1970-01-01T00:16:45.010Z (5 s)"
    assert rows[("ConditionEvaluated", "refund")] == "when: false (skipped)"
    assert rows[("ConditionEvaluated", "ship")] == "when: true"
    steps = [r.detail for r in timeline(loop) if r.type == "LoopStepDecided"]
    assert steps == ['step 0: search {"q":"rivers"} spend 2', 'step 1: finish the Nile']
    assert rows[("ParentLinked", "c/1")] == "child of p (c attempt 1)"
