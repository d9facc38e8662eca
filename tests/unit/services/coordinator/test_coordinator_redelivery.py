"""Crashes between a batch's effects (``BatchApplier.apply_batch`` and ``recover`` with an
in-memory bus and table, killed at each fault point): after recovery and redelivery of
every uncommitted input, in any cross-topic order, no seq is ever published with two
bodies, none is missing, and the table folds from the published history."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.kinds.map import STEP_DISPATCHES
from headwater.core.spec.fields import DEFAULT_QUEUE
from headwater.core.state import WorkflowState
from headwater.topics import Topics
from services.coordinator import batch as batch_module
from services.coordinator import inputs as inputs_module
from services.coordinator import intents
from services.coordinator.batch import BatchApplier
from services.coordinator.keys import TABLE_KEY_SEP, intent_key
from services.coordinator.records import DeadLetter, InputRecord, Outgoing
from services.coordinator.snapshot import dump_state
from services.coordinator.store import TableStore
from services.coordinator.timers import TimerIndex

TOPICS = Topics("unit")
WF = "wf-1"
AT = 1_700_000_000_000
SPEC = {"name": "flaky", "retry": {"max_attempts": 3, "backoff_base": 0.2},
        "nodes": [{"id": "f", "task": "t.f"}, {"id": "g", "task": "t.g", "needs": ["f"]}]}


class Killed(BaseException):
    """The process died at this point."""


class Bus:
    """Every record the broker acknowledged, in order."""

    def __init__(self) -> None:
        self.records: list[Outgoing] = []

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        self.records += records

    def events(self) -> list[ev.HistoryEvent]:
        return [codec.decode(r.value) for r in self.records if r.topic == TOPICS.events]


class LocalStore(dict[bytes, bytes]):
    """A faust table's local store: a dict that keeps the changelog offsets it was told."""

    persisted: dict[Any, int]

    def set_persisted_offset(self, tp: Any, offset: int) -> None:
        self.persisted = {**getattr(self, "persisted", {}), tp: offset}


class Producer:
    """The app's producer: every record is durable as soon as sent (a crash loses
    nothing written before it)."""

    def __init__(self) -> None:
        self.offsets: dict[tuple[str, int], int] = {}

    async def send(self, topic: str, key: bytes, value: bytes | None, partition: int,
                   timestamp: Any, headers: Any) -> Any:
        offset = self.offsets.get((topic, partition), -1) + 1
        self.offsets[(topic, partition)] = offset
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        done.set_result(SimpleNamespace(topic=topic, partition=partition, offset=offset))
        return done


class FaustTable:
    """What ``TableStore`` uses of a faust table: its local store, its changelog topic's
    name and the app's producer."""

    def __init__(self) -> None:
        self.data = LocalStore()
        self.changelog_topic = SimpleNamespace(get_topic_name=lambda: "unit-changelog")
        self.app = SimpleNamespace(producer=Producer())

    def get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def keys(self) -> list[bytes]:
        return list(self.data)

    def partition_for_key(self, key: bytes) -> int:
        return 0


class Table(TableStore):
    """The real store over ``FaustTable``."""

    def __init__(self) -> None:
        super().__init__(FaustTable())

    @property
    def entries_(self) -> dict[bytes, bytes]:
        data: dict[bytes, bytes] = self.table.data
        return data


def rec(topic: str, offset: int, value: Any) -> InputRecord:
    return InputRecord(topic, 0, offset, WF.encode(), codec.encode(value), [])


INPUTS = [
    rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, SPEC, {}, AT)),
    rec(TOPICS.reports, 0, ev.TaskStarted(WF, "f", None, 1, AT + 10, "w-1")),
    rec(TOPICS.reports, 1, ev.TaskFailed(WF, "f", None, 1, AT + 20, "boom", "E")),
    rec(TOPICS.control, 0, ev.TimerFired(WF, "retry:f:2", AT + 300)),
    rec(TOPICS.reports, 2, ev.TaskStarted(WF, "f", None, 2, AT + 400, "w-1")),
    rec(TOPICS.reports, 3, ev.TaskHeartbeated(WF, "f", None, 2, AT + 500)),
    rec(TOPICS.control, 1, ev.TimerFired(WF, "lease:f:2", AT + 40_000)),
    rec(TOPICS.reports, 4, ev.TaskSucceeded(WF, "f", None, 2, AT + 600, {"ok": 1})),
]
KILL_POINTS = ("coordinator.before_intent", "coordinator.after_intent",
               "coordinator.after_publish")


def conflicts(events: list[ev.HistoryEvent]) -> dict[int, set[str]]:
    by_seq: dict[int, list[ev.HistoryEvent]] = {}
    for e in events:
        by_seq.setdefault(e.seq, []).append(e)
    return {s: {e.type for e in es} for s, es in by_seq.items() if any(e != es[0] for e in es)}


def interleavings(records: list[InputRecord]) -> Iterator[list[InputRecord]]:
    """Every order faust may deliver ``records`` in after a restart: each topic's records
    keep their order, the topics interleave freely."""
    topics = sorted({r.topic for r in records})
    lanes = {t: [r for r in records if r.topic == t] for t in topics}
    slots = [t for t in topics for _ in lanes[t]]
    for order in sorted(set(itertools.permutations(slots))):
        taken = {t: iter(lanes[t]) for t in topics}
        yield [next(taken[t]) for t in order]


@pytest.fixture(autouse=True)
def producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs keep the times written in them (the coordinator's stamping is tested in
    ``test_coordinator_clock``): these scenarios need their timers due when they fire."""
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


@pytest.fixture
def kill_at(monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    """Set ``["point"]`` to make ``faults.point`` die there (once)."""
    armed: dict[str, str | None] = {"point": None}

    def point(name: str) -> None:
        if name == armed["point"]:
            armed["point"] = None
            raise Killed(name)

    monkeypatch.setattr(batch_module.faults, "point", point)
    return armed


def folded(events: list[ev.HistoryEvent]) -> WorkflowState | None:
    state = None
    for e in sorted({e.seq: e for e in events}.values(), key=lambda e: e.seq):
        state = evolve(state, e)
    return state


def check_history(bus: Bus, table: Table) -> None:
    events = bus.events()
    assert conflicts(events) == {}
    seqs = sorted({e.seq for e in events})
    assert seqs == list(range(1, len(seqs) + 1))
    stored = table.load(WF)
    assert stored is not None
    assert stored.seq == seqs[-1]
    state = folded(events)
    assert state is not None
    assert dump_state(state) == dump_state(stored)
    assert not any(k.startswith(intent_key(0)) for k in table.entries_)


@pytest.mark.parametrize("point", KILL_POINTS)
@pytest.mark.parametrize(("killed", "committed"), [
    (k, c) for k in range(1, len(INPUTS)) for c in (0, 2, 4) if c < k])
async def test_a_batch_killed_at_any_point_is_recovered_in_every_redelivery_order(
        point: str, killed: int, committed: int, kill_at: dict[str, str | None]) -> None:
    """Batches of two inputs (the last of them: ``killed``) applied and killed at
    ``point``; offsets committed up to input ``committed``. The new process recovers,
    then gets every input after ``committed`` again, topics interleaved in each possible
    way; then the rest."""
    applied: list[InputRecord] = INPUTS[:killed - 1]
    batch = INPUTS[killed - 1:killed + 1]
    for order in interleavings(INPUTS[committed:killed + 1]):
        bus, table = Bus(), Table()
        first = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
        first.history_heartbeats = True  # so that every input here has effects
        for r in applied:
            await first.apply_batch([r])
        kill_at["point"] = point
        with pytest.raises(Killed):
            await first.apply_batch(batch)
        table.clear_cache()  # a new process
        again = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
        again.history_heartbeats = True
        await again.recover({0})
        assert again.redone == (0 if point == "coordinator.before_intent" else 1)
        await again.apply_batch(order)
        await again.apply_batch(INPUTS[killed + 1:])
        check_history(bus, table)


async def killed_after_the_second_intent(bus: Bus, table: Table,
                                         kill_at: dict[str, str | None]) -> None:
    """Apply ``INPUTS[:2]``, then die once ``INPUTS[2:4]``'s intent is durable."""
    first = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    await first.apply_batch(INPUTS[:2])
    kill_at["point"] = "coordinator.after_intent"
    with pytest.raises(Killed):
        await first.apply_batch(INPUTS[2:4])


async def test_an_intent_carried_out_twice_repeats_identical_records_only(
        kill_at: dict[str, str | None]) -> None:
    """Killed after the intent, then again after its redo: the third process redoes it
    once more; readers see only duplicates of identical records."""
    bus, table = Bus(), Table()
    await killed_after_the_second_intent(bus, table, kill_at)
    kill_at["point"] = "coordinator.after_redo"
    with pytest.raises(Killed):
        await BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20).recover({0})
    table.clear_cache()
    third = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    await third.recover({0})
    await third.apply_batch(INPUTS[2:])
    assert third.replayed == 2  # the redone batch's inputs
    check_history(bus, table)
    assert len(bus.records) > len(set(bus.records))  # the redo did repeat records


async def test_a_large_intent_spans_chunks_and_is_recovered_whole(
        kill_at: dict[str, str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3,000-item map's first window of dispatches (1,000), with chunks of 16 KiB: its
    intent spans several."""
    monkeypatch.setattr(intents, "CHUNK_BYTES", 16 << 10)
    spec = {"name": "big", "nodes": [{"id": "m", "kind": "map", "over": "${input.items}",
                                      "task": "t.m", "input": {"x": "${item}"}}]}
    bus, table = Bus(), Table()
    sub = InputRecord(TOPICS.submissions, 0, 0, WF.encode(), codec.encode(
        ev.WorkflowSubmitted(WF, spec, {"items": list(range(3000))}, AT)), [])
    kill_at["point"] = "coordinator.after_intent"
    with pytest.raises(Killed):
        await BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20).apply_batch([sub])
    assert bus.records == []
    assert table.get_entry(intent_key(0, 2)) is not None  # chunked
    again = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    await again.recover({0})
    dispatches = [r for r in bus.records if r.topic == TOPICS.tasks(DEFAULT_QUEUE)]
    assert len(dispatches) == STEP_DISPATCHES
    check_history(bus, table)


def test_the_header_keeps_the_applied_offsets() -> None:
    bus, table = Bus(), Table()
    asyncio.run(BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20).apply_batch(
        INPUTS[:2]))
    assert table.load(WF) is not None
    table.clear_cache()  # read back from the header entry
    assert table.applied(WF) == {TOPICS.submissions: 0, TOPICS.reports: 0}
    assert all(TABLE_KEY_SEP.encode() not in k or k.startswith(WF.encode())
               for k in table.entries_)


async def test_an_unreadable_intent_is_dead_lettered_and_its_inputs_applied_again(
        kill_at: dict[str, str | None]) -> None:
    """A slot corrupted after a kill at ``after_intent``: recovery sends it to the DLQ with
    the reason, empties it and goes on; the batch's inputs, delivered again, are applied
    to the snapshot they were first applied to (nothing of theirs was published)."""
    bus, table = DeadBus(), Table()
    await killed_after_the_second_intent(bus, table, kill_at)
    table.entries_[intent_key(0, 0)] = b"corrupt"
    table.clear_cache()
    again = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    await again.recover({0})
    assert again.redone == 0
    [dead] = bus.dead
    assert "unreadable intent of partition 0" in dead.reason
    assert dead.record.key == intent_key(0) and dead.record.value.endswith(b"corrupt")
    await again.apply_batch(INPUTS[2:])
    check_history(bus, table)


class DeadBus(Bus):
    """A bus that keeps the dead letters too."""

    def __init__(self) -> None:
        super().__init__()
        self.dead: list[DeadLetter] = []

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        await super().publish(records, dead)
        self.dead += dead


async def test_an_input_on_another_partition_than_its_workflows_is_dead_lettered() -> None:
    """A report partitioned by something else than murmur2 of the key would reach another
    coordinator, which does not own its workflow (submissions and control records are
    moved home instead: ``test_coordinator_homing``)."""
    bus, table = DeadBus(), Table()
    elsewhere = InputRecord(TOPICS.reports, 1, 0, WF.encode(),
                            codec.encode(ev.TaskStarted(WF, "f", None, 1, AT, "w-1")), [])
    await BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20).apply_batch([elsewhere])
    [dead] = bus.dead
    assert dead.reason.startswith(f"{TOPICS.reports}[1] holds a record of workflow "
                                  f"'{WF}', whose records belong on partition 0")
    assert bus.records == [] and table.load(WF) is None


async def test_a_record_within_the_limit_but_not_its_framing_fails_the_workflow_as_data(
        ) -> None:
    """A dispatch whose value alone fits ``max_record_bytes`` but not with the room aiokafka
    needs around it: refused before it reaches an intent it could never leave."""
    limit = 20_000
    spec = {"name": "big", "nodes": [{"id": "f", "task": "t.f",
                                      "input": ["${input.blob}"] * 4}]}
    bus, table = DeadBus(), Table()
    sub = rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, spec, {"blob": "x" * 4_000},
                                                          AT))
    await BatchApplier(TOPICS, bus, table, TimerIndex(), limit).apply_batch([sub])
    [dead] = bus.dead
    assert "exceeds the limit of 20000" in dead.reason
    assert limit - 4096 < int(dead.reason.split("a record of ")[1].split()[0]) < limit
    assert [e.type for e in bus.events()] == ["WorkflowAccepted", "NodeFinished",
                                             "WorkflowFailed"]
    assert all(len(r.key) + len(r.value) <= limit for r in bus.records)
    assert table.get_entry(intent_key(0)) is None


async def test_a_workflow_whose_snapshot_would_not_fit_a_table_entry_fails_as_data() -> None:
    """Its output fits the ``WorkflowSucceeded`` record, but the snapshot header holds the
    output and more: the batch's effects on it are dropped, it fails instead, the input
    is dead-lettered, and nothing too large reaches the intent."""
    limit = 40_000
    spec = {"name": "big", "output": {"o": "${nodes.f.output}"},
            "nodes": [{"id": "f", "task": "t.f"}]}
    bus, table = DeadBus(), Table()
    coordinator = BatchApplier(TOPICS, bus, table, TimerIndex(), limit)
    await coordinator.apply_batch([
        rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, spec, {}, AT)),
        rec(TOPICS.reports, 0, ev.TaskStarted(WF, "f", None, 1, AT + 10, "w-1"))])
    output = "x" * 35_700  # the largest record 35,743 bytes fits; the header, 36,068, not
    succeeded = rec(TOPICS.reports, 1, ev.TaskSucceeded(WF, "f", None, 1, AT + 20, output))
    await coordinator.apply_batch([succeeded])
    [dead] = bus.dead
    assert dead.record == succeeded and "would hold a table entry of" in dead.reason
    types = [e.type for e in bus.events()]
    assert types[-1] == "WorkflowFailed" and "WorkflowSucceeded" not in types
    assert all(len(k) + len(v) <= limit - 4096 for k, v in table.entries_.items())
    state = table.load(WF)
    assert state is not None and state.status.value == "failed"
    table.clear_cache()
    assert table.applied(WF)[TOPICS.reports] == 1  # the input is spent, not applied again
    check_history(bus, table)
