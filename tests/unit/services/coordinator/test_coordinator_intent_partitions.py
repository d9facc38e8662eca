"""Dispatches keyed by their dispatch id: over a table of 4 partitions, every
record of a batch lands in its workflow's partition's intent, a kill after the intent is
carried out by recovering that partition alone, and a workflow failed for an oversized
snapshot publishes none of the dispatches the dropped step made."""

from __future__ import annotations

import pytest
from test_coordinator_deferred import DeadBus
from test_coordinator_redelivery import AT, TOPICS, Bus, FaustTable, Killed, Table, kill_at

from headwater import codec
from headwater.core import events as ev
from headwater.core.spec.fields import DEFAULT_QUEUE
from services.common.partitioning import partition_for
from services.coordinator import intents as intents_module
from services.coordinator.batch import BatchApplier
from services.coordinator.keys import entry_partition, intent_key
from services.coordinator.records import InputRecord
from services.coordinator.timers import TimerIndex

__all__ = ["kill_at"]

N = 4
MAP = {"name": "m", "nodes": [{"id": "m", "kind": "map", "over": "${input.xs}",
                               "task": "t.m", "input": {"x": "${item}"}}]}


class PartitionedFaustTable(FaustTable):
    def partition_for_key(self, key: bytes) -> int:
        return entry_partition(key, N)


class PartitionedTable(Table):
    def __init__(self) -> None:
        super().__init__()
        self.table = PartitionedFaustTable()


def home(wid: str) -> int:
    return partition_for(wid.encode(), N)


def ids_on_distinct_partitions() -> list[str]:
    found: dict[int, str] = {}
    i = 0
    while len(found) < N:
        found.setdefault(home(f"wf-{i}"), f"wf-{i}")
        i += 1
    return [found[p] for p in range(N)]


def submission(wid: str, offset: int, items: int = 40) -> InputRecord:
    return InputRecord(TOPICS.submissions, home(wid), offset, wid.encode(), codec.encode(
        ev.WorkflowSubmitted(wid, MAP, {"xs": list(range(items))}, AT)), [])


def owner_of(record_value: bytes) -> str:
    return str(codec.decode(record_value).workflow_id)


async def test_each_intent_holds_only_its_partitions_workflows_records(
        kill_at: dict[str, str | None]) -> None:
    wids = ids_on_distinct_partitions()
    bus, table = Bus(), PartitionedTable()
    kill_at["point"] = "coordinator.after_intent"
    with pytest.raises(Killed):
        await BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20).apply_batch(
            [submission(w, i) for i, w in enumerate(wids)])
    applier = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    pending, unreadable = applier.intent_log.pending(range(N))
    assert sorted(pending) == list(range(N)) and not unreadable
    spread = set()
    for p, intent in pending.items():
        assert {owner_of(r.value) for r in intent.records} == {wids[p]}
        assert all(r.workflow_id == "" for r in intent.records)  # read back: no owner
        spread |= {partition_for(r.key, N) for r in intent.records
                   if r.topic == TOPICS.tasks(DEFAULT_QUEUE)}
    assert len(spread) == N  # the dispatch keys really do hash elsewhere
    # the new owner of one partition only carries out that workflow's share, whole
    await applier.recover({2})
    tasks = [r for r in bus.records if r.topic == TOPICS.tasks(DEFAULT_QUEUE)]
    assert len(tasks) == 40 and {owner_of(r.value) for r in bus.records} == {wids[2]}
    assert table.get_entry(intent_key(2)) is None and table.get_entry(intent_key(1))
    assert table.load(wids[2]) is not None


async def test_a_chunked_multi_partition_intent_recovers_every_dispatch(
        kill_at: dict[str, str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intents_module, "CHUNK_BYTES", 4 << 10)
    wids = ids_on_distinct_partitions()
    bus, table = Bus(), PartitionedTable()
    kill_at["point"] = "coordinator.after_publish"
    with pytest.raises(Killed):
        await BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20).apply_batch(
            [submission(w, i, 300) for i, w in enumerate(wids)])
    first = list(bus.records)
    again = BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)
    await again.recover(set(range(N)))
    redone = bus.records[len(first):]
    assert sorted((r.topic, r.key, r.value) for r in redone) == sorted(
        (r.topic, r.key, r.value) for r in first)


async def test_an_oversized_snapshot_publishes_none_of_the_dropped_steps_dispatches(
        ) -> None:
    """f succeeds with a big output, which dispatches g and makes the header too large:
    the step is dropped and the workflow failed; g's dispatch (keyed by its dispatch id,
    not the workflow id) must go with it."""
    limit = 40_000
    wid = "wf-1"
    spec = {"name": "big", "output": {"o": "${nodes.f.output}"},
            "nodes": [{"id": "f", "task": "t.f"},
                      {"id": "g", "task": "t.g", "needs": ["f"], "input": {"x": 1}}]}
    bus, table = DeadBus(), Table()
    coordinator = BatchApplier(TOPICS, bus, table, TimerIndex(), limit)

    def r(topic: str, off: int, value: ev.Input) -> InputRecord:
        return InputRecord(topic, 0, off, wid.encode(), codec.encode(value), [])

    await coordinator.apply_batch([r(TOPICS.submissions, 0, ev.WorkflowSubmitted(wid, spec,
                                                                                 {}, AT)),
                                   r(TOPICS.reports, 0, ev.TaskStarted(wid, "f", None, 1,
                                                                       AT + 10, "w"))])
    before = len([x for x in bus.records if x.topic == TOPICS.tasks(DEFAULT_QUEUE)])
    await coordinator.apply_batch([r(TOPICS.reports, 1, ev.TaskSucceeded(
        wid, "f", None, 1, AT + 20, "x" * 35_700))])
    [dead] = bus.dead
    assert "would hold a table entry" in dead.reason
    after = [x for x in bus.records if x.topic == TOPICS.tasks(DEFAULT_QUEUE)]
    assert len(after) == before == 1  # only f's own dispatch, none for g
    state = table.load(wid)
    assert state is not None and state.status.value == "failed"
