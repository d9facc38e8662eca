"""Skipped input offsets are noticed (``OffsetContinuity``)."""

from __future__ import annotations

from services.coordinator.continuity import OffsetContinuity


def test_contiguous_and_repeated_offsets_pass() -> None:
    c = OffsetContinuity()
    assert c.check([("r", 0, 5), ("r", 0, 6), ("s", 1, 40), ("r", 0, 7)]) is None
    assert c.check([("r", 0, 6), ("r", 0, 8)]) is None  # a redelivery, then on from 7


def test_a_forward_jump_is_reported_with_the_missing_range() -> None:
    c = OffsetContinuity()
    assert c.check([("r", 2, 464), ("r", 2, 468)]) == "r[2]: offsets 465..467 were skipped"


def test_the_first_offset_after_assignment_and_after_revocation_is_accepted() -> None:
    c = OffsetContinuity()
    assert c.check([("r", 0, 10)]) is None
    c.forget([("r", 0)])
    assert c.check([("r", 0, 500)]) is None  # another process moved it on meanwhile
    assert c.check([("r", 1, 3), ("r", 0, 502)]) == "r[0]: offsets 501..501 were skipped"


def test_the_first_record_after_an_assignment_must_be_at_the_committed_offset() -> None:
    c = OffsetContinuity()
    c.expect({("r", 0): 7, ("r", 1): 3})
    assert c.check([("r", 0, 7), ("r", 0, 8)]) is None
    assert c.check([("r", 1, 4)]) == "r[1]: offsets 3..3 were skipped"


def test_records_before_the_committed_offset_are_no_skip() -> None:
    c = OffsetContinuity()
    c.expect({("r", 0): 7})
    assert c.check([("r", 0, 5), ("r", 0, 6), ("r", 0, 7)]) is None


def test_partitions_without_a_committed_offset_are_not_checked_at_first() -> None:
    c = OffsetContinuity()
    c.expect({("r", 0): -1})
    assert c.check([("r", 0, 40)]) is None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_partition_whose_log_ran_ahead_with_nothing_arriving_is_stalled() -> None:
    clock = Clock()
    c = OffsetContinuity(clock)
    c.expect({("r", 0): 5, ("r", 1): 0})
    assert c.check([("r", 0, 5), ("r", 0, 6)]) is None
    clock.now = 29.0
    assert c.stalled({("r", 0): 7, ("r", 1): 0}, 30.0) is None  # nothing past offset 6
    assert c.stalled({("r", 0): 8, ("r", 1): 0}, 30.0) is None  # offset 7 seen waiting
    clock.now = 58.0
    assert c.stalled({("r", 0): 8, ("r", 1): None}, 30.0) is None  # 29 s: not long enough
    clock.now = 59.5
    assert c.stalled({("r", 0): 8, ("r", 1): None}, 30.0) == (
        "r[0]: offsets 7..7 have waited 30 s in the log with none processed")


def test_a_record_after_a_long_quiet_is_not_a_stall() -> None:
    """The wait counts from when a record was first seen in the log, not from when its
    partition last moved: a coordinator idle for 60 s whose partition then receives a
    burst is not stalled (it once restarted itself here, each time work arrived)."""
    clock = Clock()
    c = OffsetContinuity(clock)
    c.expect({("r", 0): 0})
    assert c.check([("r", 0, 0)]) is None
    assert c.stalled({("r", 0): 1}, 30.0) is None  # all processed
    clock.now = 60.0  # a minute of quiet, then a burst lands
    assert c.stalled({("r", 0): 400}, 30.0) is None
    clock.now = 60.2
    assert c.check([("r", 0, i) for i in range(1, 400)]) is None
    assert c.stalled({("r", 0): 400}, 30.0) is None


def test_steady_progress_behind_a_growing_log_is_not_a_stall() -> None:
    clock = Clock()
    c = OffsetContinuity(clock)
    c.expect({("r", 0): 0})
    for second in range(100):  # always 50 records behind, but moving every second
        clock.now = float(second)
        assert c.check([("r", 0, second)]) is None
        assert c.stalled({("r", 0): second + 51}, 30.0) is None


def test_progress_and_revocation_clear_a_stall() -> None:
    clock = Clock()
    c = OffsetContinuity(clock)
    c.expect({("r", 0): 0})
    clock.now = 40.0
    assert c.check([("r", 0, 0)]) is None
    assert c.stalled({("r", 0): 5}, 30.0) is None
    clock.now = 80.0
    c.forget([("r", 0)])
    assert c.stalled({("r", 0): 5}, 30.0) is None
