"""Which offsets a worker may commit when records finish out of order (``OffsetTracker``)."""

from __future__ import annotations

import random

import pytest

from services.worker.offsets import OffsetTracker

P0, P1 = ("tasks.cpu", 0), ("tasks.cpu", 1)


def test_commit_waits_for_the_lowest_in_flight_offset() -> None:
    tracker: OffsetTracker[tuple[str, int]] = OffsetTracker()
    for offset in (10, 11, 12):
        tracker.started(P0, offset)
    assert tracker.committable() == {P0: 10}
    tracker.finished(P0, 12)
    tracker.finished(P0, 11)
    assert tracker.committable() == {P0: 10}  # 10 is still running
    tracker.finished(P0, 10)
    assert tracker.committable() == {P0: 13}
    assert tracker.in_flight == 0


def test_only_partitions_that_advanced_are_returned() -> None:
    tracker: OffsetTracker[tuple[str, int]] = OffsetTracker()
    tracker.started(P0, 0)
    tracker.started(P1, 5)
    tracker.finished(P1, 5)
    assert tracker.committable() == {P0: 0, P1: 6}
    tracker.mark_committed({P0: 0, P1: 6})
    assert tracker.committable() == {}
    tracker.finished(P0, 0)
    assert tracker.committable() == {P0: 1}
    tracker.mark_committed({P0: 1})
    tracker.started(P1, 6)
    assert tracker.committable() == {}  # P1 stays at 6 while 6 runs
    assert tracker.in_flight == 1


def test_forget_drops_revoked_partitions() -> None:
    tracker: OffsetTracker[tuple[str, int]] = OffsetTracker()
    tracker.started(P0, 3)
    tracker.started(P1, 4)
    tracker.mark_committed({P0: 3})
    tracker.forget([P0])
    assert tracker.committable() == {P1: 4}
    assert tracker.in_flight == 1
    tracker.started(P0, 1)  # reassigned later, from an earlier position
    assert tracker.committable() == {P0: 1, P1: 4}


def test_finishing_an_unknown_offset_is_harmless() -> None:
    tracker: OffsetTracker[int] = OffsetTracker()
    tracker.finished(0, 99)
    assert tracker.committable() == {}
    tracker.started(0, 1)
    tracker.finished(0, 99)
    assert tracker.committable() == {0: 1}


@pytest.mark.parametrize("seed", range(20))
def test_commit_position_never_passes_an_in_flight_offset(seed: int) -> None:
    rng = random.Random(seed)
    tracker: OffsetTracker[int] = OffsetTracker()
    next_offset = {0: 0, 1: 100}
    running: dict[int, set[int]] = {0: set(), 1: set()}
    done: dict[int, set[int]] = {0: set(), 1: set()}
    committed: dict[int, int] = {}
    for _ in range(400):
        p = rng.choice((0, 1))
        if running[p] and rng.random() < 0.5:
            offset = rng.choice(sorted(running[p]))
            running[p].discard(offset)
            done[p].add(offset)
            tracker.finished(p, offset)
        else:
            running[p].add(next_offset[p])
            tracker.started(p, next_offset[p])
            next_offset[p] += 1
        assert tracker.in_flight == len(running[0]) + len(running[1])
        if rng.random() < 0.3:
            offsets = tracker.committable()
            for part, position in offsets.items():
                assert all(position <= o for o in running[part]), "passes an in-flight record"
                below = range(100 if part else 0, position)
                assert all(o in done[part] for o in below), "commits an unfinished record"
                assert position > committed.get(part, -1)
            committed.update(offsets)
            tracker.mark_committed(offsets)
