"""The coordinator's metrics (``services/coordinator/metrics.py``): attempts by outcome,
task and workflow name and workflow durations by status and name (names capped) from the
history a batch recorded, the batches, the intent slots, the
dead letters and the records moved home move when their code runs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import REGISTRY
from test_coordinator_bus import bus as faust_bus
from test_coordinator_intents import INTENT, Entries
from test_coordinator_redelivery import AT, SPEC, TOPICS, WF, Bus, Table, rec

from headwater.core import events as ev
from headwater.core.machine import step
from services.common.metrics import OTHER, BoundedLabels
from services.coordinator import homing
from services.coordinator import inputs as inputs_module
from services.coordinator import metrics as coordinator_metrics
from services.coordinator.batch import BatchApplier
from services.coordinator.intents import IntentLog
from services.coordinator.metrics import OUTCOMES, count_events
from services.coordinator.records import DeadLetter, InputRecord
from services.coordinator.timers import TimerIndex


def sample(name: str, **labels: str) -> float:
    """The sum of the samples ``name`` whose labels include ``labels`` now (0 when there
    is none yet)."""
    return sum(s.value for family in REGISTRY.collect() for s in family.samples
               if s.name == name and labels.items() <= s.labels.items())


def attempts(**labels: str) -> dict[str, float]:
    return {o: sample("headwater_attempts_total", outcome=o, **labels) for o in OUTCOMES}


def moved(before: dict[str, float], **labels: str) -> dict[str, float]:
    """What changed since ``before`` (outcome -> delta), zeros left out."""
    return {o: n - before[o] for o, n in attempts(**labels).items() if n != before[o]}


@pytest.fixture(autouse=True)
def producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs keep the times written in them, so that timers fire when the test says."""
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


def history(*bodies: Any) -> list[ev.HistoryEvent]:
    return [ev.HistoryEvent(b.workflow_id, seq, b) for seq, b in enumerate(bodies, 1)]


@pytest.mark.parametrize(("bodies", "expected"), [
    ([ev.TaskSucceeded(WF, "f", None, 1, AT)], {"succeeded": 1}),
    ([ev.TaskFailed(WF, "f", None, 1, AT, "boom", "E")], {"failed": 1}),
    ([ev.TaskFailed(WF, "f", None, 1, AT, "step 3 differs", "NondeterminismError")],
     {"nondeterministic": 1}),
    ([ev.TaskCancelled(WF, "m", 3, 1, AT)], {"cancelled": 1}),
    # A deadline: the TaskFailed recorded with it is the same attempt's end.
    ([ev.TimerFired(WF, "deadline:f:2", AT),
      ev.TaskFailed(WF, "f", None, 2, AT, "timed out", "TimeoutError")], {"timed_out": 1}),
    # A lease that restarts the run: its TaskCancelled is the same attempt's end.
    ([ev.TimerFired(WF, "lease:m[1]:1", AT), ev.TaskCancelled(WF, "m", 1, 1, AT),
      ev.TaskCancelled(WF, "m", 2, 1, AT)], {"lost": 1, "cancelled": 1}),
    # A retry timer, a worker's own TimeoutError, a progress report: no attempt's end.
    ([ev.TimerFired(WF, "retry:f:2", AT), ev.TaskProgressed(WF, "f", None, 2, AT, 0.5)], {}),
    ([ev.TaskFailed(WF, "f", None, 3, AT, "slow", "TimeoutError")], {"failed": 1}),
])
def test_each_attempt_end_is_counted_once_by_its_outcome(
        bodies: list[Any], expected: dict[str, float]) -> None:
    before = attempts()
    count_events(history(*bodies), {})
    assert moved(before) == expected


def test_a_workflow_end_is_timed_from_its_acceptance_by_its_name() -> None:
    state: Any = SimpleNamespace(created_at_ms=AT, name="nightly")
    name = "headwater_workflow_duration_seconds"
    labels = {"status": "cancelled", "workflow": "nightly"}
    count, total = sample(f"{name}_count", **labels), sample(f"{name}_sum", **labels)
    count_events(history(ev.WorkflowCancelled(WF, AT + 2500)), {WF: state})
    assert sample(f"{name}_count", **labels) == count + 1
    assert sample(f"{name}_sum", **labels) == pytest.approx(total + 2.5)


LABELLED = {"name": "labelled", "nodes": [
    {"id": "f", "task": "t.f"},
    {"id": "m", "kind": "map", "task": "t.m", "over": "${input}"},
    {"id": "c", "kind": "workflow", "workflow": {"name": "kid", "nodes": [
        {"id": "x", "task": "t.x"}]}}]}


@pytest.mark.parametrize(("body", "outcome", "task"), [
    (ev.TaskSucceeded(WF, "f", None, 1, AT), "succeeded", "t.f"),
    (ev.TaskFailed(WF, "m", 4, 1, AT, "boom", "E"), "failed", "t.m"),
    (ev.TimerFired(WF, "lease:m[2]:1", AT), "lost", "t.m"),
    (ev.TimerFired(WF, "deadline:f:1", AT), "timed_out", "t.f"),
    (ev.TaskSucceeded(WF, "c", None, 1, AT), "succeeded", "workflow"),
    (ev.TaskSucceeded(WF, "gone", None, 1, AT), "succeeded", "unknown"),
])
def test_an_attempt_is_counted_by_its_task_and_its_workflow_name(
        body: Any, outcome: str, task: str) -> None:
    state = step(None, ev.WorkflowSubmitted(WF, LABELLED, [1, 2, 3, 4, 5], AT)).state
    before = attempts(task=task, workflow="labelled")
    count_events(history(body), {WF: state})  # type: ignore[dict-item]
    assert moved(before, task=task, workflow="labelled") == {outcome: 1}


def test_an_attempt_of_a_workflow_whose_state_is_not_at_hand_is_unknown() -> None:
    before = attempts(task="unknown", workflow="unknown")
    count_events(history(ev.TaskSucceeded(WF, "f", None, 1, AT)), {})
    assert moved(before, task="unknown", workflow="unknown") == {"succeeded": 1}


def test_task_and_workflow_names_past_the_cap_count_as_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Any client names its workflows and tasks: a fresh name per run must not make a
    # fresh series per run, for ever.
    monkeypatch.setattr(coordinator_metrics, "_ATTEMPT_LABELS", BoundedLabels(2))
    monkeypatch.setattr(coordinator_metrics, "_WORKFLOW_LABELS", BoundedLabels(1))
    before = attempts(task=OTHER, workflow=OTHER)
    ended = sample("headwater_workflow_duration_seconds_count", workflow=OTHER)
    for i in range(5):
        node = SimpleNamespace(child=None, code=None, loop=None, task=f"t.junk-{i}",
                               queue="q", retry=None, timeout=None, heartbeat_timeout=None)
        state: Any = SimpleNamespace(created_at_ms=AT, name=f"junk-{i}",
                                     spec=SimpleNamespace(node=lambda _id, n=node: n))
        count_events(history(ev.TaskSucceeded(WF, "f", None, 1, AT),
                             ev.WorkflowSucceeded(WF, AT + 1, None)), {WF: state})
    assert moved(before, task=OTHER, workflow=OTHER) == {"succeeded": 3}
    assert sample("headwater_workflow_duration_seconds_count", workflow=OTHER) == ended + 4
    assert attempts(task="t.junk-1", workflow="junk-1")["succeeded"] == 1


async def test_a_run_through_the_applier_counts_its_attempts_batches_and_end() -> None:
    applier = BatchApplier(TOPICS, Bus(), Table(), TimerIndex(), 16 << 20)
    before = attempts()
    batches = sample("headwater_coordinator_batch_size_records_count")
    records = sample("headwater_coordinator_batch_size_records_sum")
    applies = sample("headwater_coordinator_batch_apply_seconds_count")
    events = sample("headwater_coordinator_history_events_total")
    ended = sample("headwater_workflow_duration_seconds_count", status="succeeded")
    spent = sample("headwater_workflow_duration_seconds_sum", status="succeeded")
    pending = sample("headwater_coordinator_intents_pending")
    inputs = [
        [rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, SPEC, {}, AT))],
        [rec(TOPICS.reports, 0, ev.TaskStarted(WF, "f", None, 1, AT + 10, "w")),
         rec(TOPICS.reports, 1, ev.TaskFailed(WF, "f", None, 1, AT + 20, "boom", "E"))],
        [rec(TOPICS.control, 0, ev.TimerFired(WF, "retry:f:2", AT + 10_000))],
        [rec(TOPICS.reports, 2, ev.TaskStarted(WF, "f", None, 2, AT + 10_100, "w"))],
        [rec(TOPICS.control, 1, ev.TimerFired(WF, "lease:f:2", AT + 50_000))],  # lost
        [rec(TOPICS.control, 2, ev.TimerFired(WF, "retry:f:3", AT + 100_000))],
        [rec(TOPICS.reports, 3, ev.TaskSucceeded(WF, "f", None, 3, AT + 100_100))],
        [rec(TOPICS.reports, 4, ev.TaskSucceeded(WF, "g", None, 1, AT + 101_000))],
    ]
    for batch in inputs:
        await applier.apply_batch(batch)
    assert moved(before) == {"failed": 1, "lost": 1, "succeeded": 2}
    assert sample("headwater_coordinator_batch_size_records_count") == batches + len(inputs)
    assert sample("headwater_coordinator_batch_size_records_sum") == records + 9
    assert sample("headwater_coordinator_batch_apply_seconds_count") == applies + len(inputs)
    assert sample("headwater_coordinator_history_events_total") > events + 9
    assert sample("headwater_workflow_duration_seconds_count", status="succeeded") == ended + 1
    assert sample("headwater_workflow_duration_seconds_sum", status="succeeded") == (
        pytest.approx(spent + 101.0))
    assert sample("headwater_coordinator_intents_pending") == pending  # every slot cleared


def test_intent_slots_are_pending_from_their_record_to_their_clear() -> None:
    log = IntentLog(Entries())
    before = sample("headwater_coordinator_intents_pending")
    log.record({3: INTENT, 4: INTENT})
    assert sample("headwater_coordinator_intents_pending") == before + 2
    log.clear([3, 4, 5])  # 5 holds none
    assert sample("headwater_coordinator_intents_pending") == before


def test_an_intent_found_at_recovery_is_pending_until_cleared() -> None:
    left = Entries()
    IntentLog(left).record({6: INTENT})  # by a process that died before clearing it
    before = sample("headwater_coordinator_intents_pending")
    recovered = IntentLog(left)
    assert recovered.pending([6, 7])[0].keys() == {6}
    assert sample("headwater_coordinator_intents_pending") == before + 1
    recovered.clear([6])
    assert sample("headwater_coordinator_intents_pending") == before


async def test_a_dead_letter_is_counted_by_its_source_topic() -> None:
    bus, _ = faust_bus(1 << 20)
    before = sample("headwater_dead_letters_total", topic="p.reports")
    record = InputRecord("p.reports", 3, 42, b"wf", b"\x00bad", [])
    await bus.publish([], [DeadLetter(record, "undecodable"), DeadLetter(record, "again")])
    assert sample("headwater_dead_letters_total", topic="p.reports") == before + 2


def test_records_moved_home_are_read_from_the_homing_count() -> None:
    before = sample("headwater_coordinator_records_moved_total", topic="p.submissions")
    homing.MOVED.add("p.submissions")
    assert sample("headwater_coordinator_records_moved_total",
                  topic="p.submissions") == before + 1
