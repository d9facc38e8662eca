"""Retention: an ended workflow's table entries are purged after its retention, in one
intent (a kill at any point leaves the whole workflow or only its marker), and every
input for a purged id is dead-lettered instead of starting a second history."""

from __future__ import annotations

import pytest
from test_coordinator_redelivery import AT, KILL_POINTS, SPEC, TOPICS, WF, Bus, Killed, Table, rec

from headwater.core import events as ev
from headwater.core import retention as core_retention
from services.coordinator import batch as batch_module
from services.coordinator import inputs as inputs_module
from services.coordinator import retention
from services.coordinator.batch import BatchApplier
from services.coordinator.keys import TABLE_KEY_SEP, table_entry_key
from services.coordinator.records import DeadLetter, Outgoing
from services.coordinator.timers import TimerIndex

RETENTION_MS = 60_000
DONE_AT = AT + 600
RUN = [
    rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, SPEC, {}, AT)),
    rec(TOPICS.reports, 0, ev.TaskStarted(WF, "f", None, 1, AT + 10, "w-1")),
    rec(TOPICS.reports, 1, ev.TaskSucceeded(WF, "f", None, 1, AT + 20, {"ok": 1})),
    rec(TOPICS.reports, 2, ev.TaskStarted(WF, "g", None, 1, AT + 30, "w-1")),
    rec(TOPICS.reports, 3, ev.TaskSucceeded(WF, "g", None, 1, DONE_AT, {"ok": 2})),
]


class DeadBus(Bus):
    """A bus that also keeps the dead letters."""

    def __init__(self) -> None:
        super().__init__()
        self.dead: list[DeadLetter] = []

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        await super().publish(records, dead)
        self.dead += dead


def applier(bus: Bus, table: Table) -> BatchApplier:
    a = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    a.retention_ms = RETENTION_MS
    return a


def purge_request(at_ms: int) -> ev.TimerFired:
    return ev.TimerFired(WF, core_retention.RETENTION_TIMER, at_ms)


def workflow_keys(table: Table) -> set[bytes]:
    own = table_entry_key(WF)
    return {k for k in table.entries_ if k == own or k.startswith(own + TABLE_KEY_SEP.encode())}


@pytest.fixture(autouse=True)
def producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs keep the times written in them, as in ``test_coordinator_redelivery``."""
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


async def finished() -> tuple[DeadBus, Table, BatchApplier]:
    bus, table = DeadBus(), Table()
    coordinator = applier(bus, table)
    await coordinator.apply_batch(RUN)
    state = table.load(WF)
    assert state is not None and state.status.terminal
    return bus, table, coordinator


def test_purge_due_only_for_an_ended_workflow_past_retention() -> None:
    assert not core_retention.purge_due(None, DONE_AT + RETENTION_MS, RETENTION_MS)
    assert retention.sweep_interval_s(5) == 1.0
    assert retention.sweep_interval_s(100) == 10.0
    assert retention.sweep_interval_s(86_400) == 60.0


async def test_an_early_purge_request_changes_nothing() -> None:
    bus, table, coordinator = await finished()
    before = dict(table.entries_)
    await coordinator.apply_batch([rec(TOPICS.control, 0, purge_request(DONE_AT + 1000))])
    assert dict(table.entries_) == before
    assert bus.dead == []


async def test_a_purge_deletes_every_entry_and_keeps_a_small_marker() -> None:
    bus, table, coordinator = await finished()
    assert retention.expired_headers(table.entries_.items(), DONE_AT + RETENTION_MS,
                                     RETENTION_MS) == [WF]
    assert retention.expired_headers(table.entries_.items(), DONE_AT + RETENTION_MS - 1,
                                     RETENTION_MS) == []
    events = len(bus.events())
    await coordinator.apply_batch([rec(TOPICS.control, 0,
                                       purge_request(DONE_AT + RETENTION_MS))])
    assert workflow_keys(table) == {retention.purged_key(WF)}
    marker = table.entries_[retention.purged_key(WF)]
    assert len(marker) < 200
    assert core_retention.load_marker(marker)["status"] == "succeeded"
    assert table.load(WF) is None and table.scan() == []
    assert len(bus.events()) == events  # nothing recorded in the history


REFUSED = [
    rec(TOPICS.submissions, 5, ev.WorkflowSubmitted(WF, SPEC, {"other": 1}, AT + 90_000)),
    rec(TOPICS.submissions, 6, ev.ChildSubmitted(WF, "p-1", "c", None, 1, SPEC, {}, AT + 90_000)),
    rec(TOPICS.control, 5, ev.SignalSent(WF, "approval", AT + 90_000)),
]
UNCHANGED = [
    rec(TOPICS.submissions, 7, ev.WorkflowSubmitted(WF, SPEC, {}, AT + 90_000)),
    rec(TOPICS.reports, 9, ev.TaskSucceeded(WF, "f", None, 1, AT + 90_000, {"late": 1})),
    rec(TOPICS.control, 6, ev.CancelRequested(WF, AT + 90_000, "too late")),
]


async def _after_purge(record: object, same_batch: bool) -> DeadBus:
    """Purge the finished workflow, then apply ``record`` (in the purge's batch, or in
    the next one, read again from the table); the workflow stays purged, with no event."""
    bus, table, coordinator = await finished()
    purge = rec(TOPICS.control, 0, purge_request(DONE_AT + RETENTION_MS))
    events = len(bus.events())
    if same_batch:
        await coordinator.apply_batch([purge, record])  # type: ignore[list-item]
    else:
        await coordinator.apply_batch([purge])
        table.clear_cache()
        await applier(bus, table).apply_batch([record])  # type: ignore[list-item]
    assert len(bus.events()) == events
    assert workflow_keys(table) == {retention.purged_key(WF)}
    return bus


@pytest.mark.parametrize("record", REFUSED, ids=lambda r: r.topic + str(r.offset))
@pytest.mark.parametrize("same_batch", [False, True])
async def test_a_signal_or_another_submission_for_a_purged_id_is_dead_lettered(
        record: object, same_batch: bool) -> None:
    bus = await _after_purge(record, same_batch)
    assert len(bus.dead) == 1
    assert "was purged after its retention" in bus.dead[0].reason


@pytest.mark.parametrize("record", UNCHANGED, ids=lambda r: r.topic + str(r.offset))
@pytest.mark.parametrize("same_batch", [False, True])
async def test_a_duplicate_submission_late_report_or_cancel_for_a_purged_id_changes_nothing(
        record: object, same_batch: bool) -> None:
    """As they changed nothing in the ended workflow before its purge."""
    bus = await _after_purge(record, same_batch)
    assert bus.dead == []


@pytest.mark.parametrize("point", KILL_POINTS)
async def test_a_kill_during_a_purge_leaves_all_or_nothing_and_recovery_finishes_it(
        point: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bus, table, coordinator = await finished()
    whole = workflow_keys(table)
    armed = {"point": point}

    def die(name: str) -> None:
        if armed["point"] == name:
            armed["point"] = ""
            raise Killed(name)

    monkeypatch.setattr(batch_module.faults, "point", die)
    purge = rec(TOPICS.control, 0, purge_request(DONE_AT + RETENTION_MS))
    with pytest.raises(Killed):
        await coordinator.apply_batch([purge])
    left = workflow_keys(table)
    assert left in (whole, {retention.purged_key(WF)}) or point == "coordinator.after_intent"
    table.clear_cache()
    successor = applier(bus, table)
    await successor.recover({0})
    left = workflow_keys(table)
    assert left in (whole, {retention.purged_key(WF)})
    await successor.apply_batch([purge])  # not committed: delivered again
    assert workflow_keys(table) == {retention.purged_key(WF)}
    assert bus.dead == []


async def test_replay_of_a_purged_workflow_says_past_retention() -> None:
    from ops import audit
    from ops.cli import replay as replay_cli

    _, table, coordinator = await finished()
    await coordinator.apply_batch([rec(TOPICS.control, 0,
                                       purge_request(DONE_AT + RETENTION_MS))])
    marker = table.entries_[retention.purged_key(WF)]
    assert replay_cli.decode_table(WF, {retention.PURGED: marker}) == (None, "")
    report = audit.audit(WF, audit.Observed(), DONE_AT, 0)
    report = audit.past_retention(report, core_retention.load_marker(marker))
    assert report.known and report.differences == []
    assert report.table.notes[0].startswith(f"past retention: {WF} ended (succeeded")


@pytest.mark.parametrize(("raw", "seconds"), [(None, 86_400.0), ("", 86_400.0), ("off", None),
                                              ("0", None), ("2", 2.0), ("604800", 604800.0)])
def test_the_retention_setting(raw: str | None, seconds: float | None,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    from services.coordinator.settings import retention_from_env
    if raw is None:
        monkeypatch.delenv("HEADWATER_RETENTION_S", raising=False)
    else:
        monkeypatch.setenv("HEADWATER_RETENTION_S", raw)
    assert retention_from_env() == seconds


def test_a_negative_retention_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.coordinator.settings import retention_from_env
    monkeypatch.setenv("HEADWATER_RETENTION_S", "-1")
    with pytest.raises(ValueError, match="HEADWATER_RETENTION_S"):
        retention_from_env()


async def test_the_sweep_asks_once_for_each_workflow_past_retention(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, table, _ = await finished()
    sent: list[ev.TimerFired] = []

    async def send(record: ev.TimerFired) -> None:
        sent.append(record)

    monkeypatch.setattr(retention, "now_ms", lambda: DONE_AT + RETENTION_MS)
    sweep = retention.RetentionSweep(lambda: list(table.entries_.items()), send,
                                     RETENTION_MS / 1000, lambda: False)
    await sweep.tick()
    await sweep.tick()  # asked already: not again within RESEND_S
    assert [(r.workflow_id, r.timer_id) for r in sent] == [(WF, core_retention.RETENTION_TIMER)]


@pytest.mark.parametrize(("policy", "partitions", "fault"), [
    ("compact", 8, None), (" compact ", 8, None), ("delete", 8, "compact only"),
    ("compact,delete", 8, "compact only"), ("", 8, "compact only"),
    ("compact", 3, "has 3 partitions, the input topics 8"),
])
def test_a_changelog_must_be_compact_only_and_partitioned_as_the_inputs(
        policy: str, partitions: int, fault: str | None) -> None:
    from services.coordinator.app import changelog_fault
    found = changelog_fault("t-changelog", policy, partitions, 8)
    assert found is None if fault is None else (found is not None and fault in found), found
