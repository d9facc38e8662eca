"""Noticing a stand-still (``FreezeWatch``) and refusing to write after one (``fence``)."""

from __future__ import annotations

import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.topics import Topics
from services.coordinator.batch import BatchApplier, Fenced
from services.coordinator.freeze import FreezeWatch
from services.coordinator.records import InputRecord
from services.coordinator.timers import TimerIndex


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_ticks_closer_than_the_limit_are_no_stand_still() -> None:
    clock = Clock()
    watch = FreezeWatch(5.0, clock)
    for _ in range(50):
        clock.now += 0.2
        watch.tick()
    assert watch.check() is None and watch.frozen_s is None


def test_a_gap_between_ticks_is_remembered() -> None:
    clock = Clock()
    watch = FreezeWatch(5.0, clock)
    clock.now += 14.0  # SIGSTOP for 14 s, then SIGCONT: the thread ticks first
    watch.tick()
    clock.now += 0.2
    watch.tick()
    assert watch.frozen_s == pytest.approx(14.0)
    assert watch.check() == "the process stood still for 14.0 s (its partitions may be gone)"


def test_a_stand_still_not_ticked_yet_is_seen_by_the_check() -> None:
    clock = Clock()
    watch = FreezeWatch(5.0, clock)
    clock.now += 6.0  # resumed: the writer checks before the thread has ticked
    assert watch.check() == "the process stood still for 6.0 s (its partitions may be gone)"


class Store:
    def get(self, workflow_id: str) -> None:
        return None

    def partition(self, workflow_id: str) -> int:
        return 0

    def applied(self, workflow_id: str) -> dict[str, int]:
        return {}

    def get_entry(self, key: bytes) -> bytes | None:
        return None


async def test_a_fenced_coordinator_writes_nothing() -> None:
    topics = Topics("unit")

    class Bus:
        async def publish(self, records: object, dead: object) -> None:
            raise AssertionError("published while fenced")

    class Table(Store):
        def entries(self, state: object, parts: object,
                    applied: object) -> list[tuple[bytes, bytes]]:
            return [(b"k", b"v")]

        def write(self, entries: object) -> list[object]:
            raise AssertionError("wrote while fenced")

        def forget(self, workflow_id: str) -> None:
            pass

    applier = BatchApplier(topics, Bus(), Table(), TimerIndex(), 16 << 20,  # type: ignore[arg-type]
                              fence=lambda: "stood still")
    spec = {"name": "one", "nodes": [{"id": "a", "task": "t.a"}]}
    record = InputRecord(topics.submissions, 0, 0, b"wf", codec.encode(
        ev.WorkflowSubmitted("wf", spec, {}, 1)), [])
    with pytest.raises(Fenced, match="stood still"):
        await applier.apply_batch([record])
    with pytest.raises(Fenced, match="stood still"):
        await applier.recover({0})
