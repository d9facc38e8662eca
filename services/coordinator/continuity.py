"""Checks that the coordinator sees every input offset, in order.

Offsets of a partition written without transactions are contiguous, so a record whose
offset is more than one past the last one processed means records were skipped. faust
can drop a record whose delivery to the stream was interrupted (a rebalance starting
while the stream's buffer was full) and go on after it; applying later records first
would then make the history depend on delivery luck. The coordinator restarts instead,
before acknowledging the batch, and resumes from the last committed offset.

The first record of a partition after it was assigned is checked too, against where it
must start (``expect``: the group's committed offset, or the partition's first offset
when none was committed; ``faust_seam.start_offsets``): a coordinator that starts a partition
anywhere else would never see the records before (seen in the fault suite). And a
record dropped last, with nothing after it, is noticed by ``stalled``: the partition's
log end stays past the last offset processed, with no progress, for as long as the
stall limit. The wait is measured from when the unprocessed record was first seen in
the log, not from when the partition last moved: after an hour of quiet, the first new
record has waited milliseconds, not an hour. How they are hooked to faust's events is
``faust_seam.InputWatch``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping


class OffsetContinuity:
    """The last offset processed per ``(topic, partition)`` since it was assigned, and
    since when records past it have been waiting in the log.

    Args:
        clock: monotonic seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._last: dict[tuple[str, int], int] = {}
        self._waiting_since: dict[tuple[str, int], float] = {}

    def check(self, records: Iterable[tuple[str, int, int]]) -> str | None:
        """Record ``(topic, partition, offset)`` triples in order.

        Returns:
            A description of the first skip found (the triples after it are not
            recorded), or None when every offset follows the last one seen.
        """
        for topic, partition, offset in records:
            key = (topic, partition)
            last = self._last.get(key)
            if last is not None and offset > last + 1:
                return f"{topic}[{partition}]: offsets {last + 1}..{offset - 1} were skipped"
            if last is None or offset > last:
                self._last[key] = offset
                self._waiting_since.pop(key, None)  # progress: whatever waits, waits anew
        return None

    def stalled(self, ends: Mapping[tuple[str, int], int | None],
                after_s: float) -> str | None:
        """A partition whose log has held records past the last one processed for
        ``after_s`` seconds with no progress meanwhile: a record lost on its way to the
        stream with nothing after it to reveal the gap. Call it periodically: the wait
        of a record counts from the first call that saw it in the log (``ends``: the
        next offset to be written, per partition; None: unknown).

        Returns:
            A description of the first stalled partition, or None.
        """
        now = self.clock()
        found = None
        for key, end in sorted(ends.items()):
            last = self._last.get(key)
            if last is None or end is None or end <= last + 1:
                self._waiting_since.pop(key, None)
                continue
            since = self._waiting_since.setdefault(key, now)
            if found is None and now - since >= after_s:
                found = (f"{key[0]}[{key[1]}]: offsets {last + 1}..{end - 1} have waited "
                         f"{now - since:.0f} s in the log with none processed")
        return found

    def expect(self, committed: Mapping[tuple[str, int], int]) -> None:
        """Partitions assigned: their next records start at these committed offsets (the
        next offset to read; partitions without a committed offset are not checked)."""
        for key, offset in committed.items():
            if offset >= 0:
                self._last[key] = offset - 1
                self._waiting_since.pop(key, None)

    def forget(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Partitions revoked: another process may move them on meanwhile."""
        for key in partitions:
            self._last.pop(key, None)
            self._waiting_since.pop(key, None)


def offset_ranges(records: Iterable[tuple[str, int, int]]) -> str:
    """``topic[partition]@first..last`` per input partition of a batch, for the log."""
    ranges: dict[tuple[str, int], list[int]] = {}
    for topic, partition, offset in records:
        seen = ranges.setdefault((topic, partition), [offset, offset])
        seen[0], seen[1] = min(seen[0], offset), max(seen[1], offset)
    return " ".join(f"{t}[{p}]@{a}..{b}" for (t, p), (a, b) in sorted(ranges.items()))
