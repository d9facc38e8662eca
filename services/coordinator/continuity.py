"""Checks that the coordinator sees every input offset, in order.

Offsets of a partition written without transactions are contiguous, so a record whose
offset is more than one past the last one processed means records were skipped. faust
can drop a record whose delivery to the stream was interrupted (a rebalance starting
while the stream's buffer was full) and go on after it; applying later records first
would then make the history depend on delivery luck. The coordinator restarts instead,
before acknowledging the batch, and resumes from the last committed offset.

The first record of a partition after it was assigned is checked too, against where it
must start (``expect``: the group's committed offset, or the partition's first offset
when none was committed; ``app.start_offsets``): a coordinator that starts a partition
anywhere else would never see the records before (seen in the fault suite).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class OffsetContinuity:
    """The last offset processed per ``(topic, partition)`` since it was assigned."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], int] = {}

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
        return None

    def expect(self, committed: Mapping[tuple[str, int], int]) -> None:
        """Partitions assigned: their next records start at these committed offsets (the
        next offset to read; partitions without a committed offset are not checked)."""
        for key, offset in committed.items():
            if offset >= 0:
                self._last[key] = offset - 1

    def forget(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Partitions revoked: another process may move them on meanwhile."""
        for key in partitions:
            self._last.pop(key, None)
