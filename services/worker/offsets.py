"""Which offsets are safe to commit when records finish out of order.

A worker runs several attempts at once; committing offset ``n`` tells Kafka every record
below ``n`` is done, so the commit may only advance to the lowest offset still in flight.
A record is finished here once it needs no redelivery (its ``TaskStarted`` acknowledged,
or skipped), which for a running attempt is long before the attempt ends.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Generic, TypeVar

P = TypeVar("P")


class OffsetTracker(Generic[P]):
    """Tracks in-flight offsets per partition ``P``."""

    def __init__(self) -> None:
        self._in_flight: dict[P, set[int]] = defaultdict(set)
        self._highest_seen: dict[P, int] = {}
        self._committed: dict[P, int] = {}

    def started(self, partition: P, offset: int) -> None:
        """A record was taken for processing."""
        self._in_flight[partition].add(offset)
        self._highest_seen[partition] = max(offset, self._highest_seen.get(partition, -1))

    def finished(self, partition: P, offset: int) -> None:
        """A record needs no redelivery (e.g. its ``TaskStarted`` is acknowledged)."""
        self._in_flight[partition].discard(offset)

    def committable(self) -> dict[P, int]:
        """Partition -> next offset to commit, for partitions that advanced since the last
        call. The committed offset is the lowest in-flight one, or one past the highest seen."""
        out: dict[P, int] = {}
        for partition, highest in self._highest_seen.items():
            in_flight = self._in_flight[partition]
            position = min(in_flight) if in_flight else highest + 1
            if position > self._committed.get(partition, -1):
                out[partition] = position
        return out

    def mark_committed(self, offsets: dict[P, int]) -> None:
        """Record that ``offsets`` were committed."""
        self._committed.update(offsets)

    def forget(self, partitions: list[P]) -> None:
        """Drop partitions that were revoked."""
        for p in partitions:
            self._in_flight.pop(p, None)
            self._highest_seen.pop(p, None)
            self._committed.pop(p, None)

    @property
    def in_flight(self) -> int:
        """Records being processed."""
        return sum(len(s) for s in self._in_flight.values())
