"""Dispatches a worker fetched but has not taken yet, and which one a free slot takes.

A worker reads its queue's topic and the queue's priority topics (one per band,
``Topics.priority``) in one consumer group; within a partition, records are taken in
offset order (the commit may only pass what was taken, ``offsets``), so what a free
slot chooses among is the first record held of each partition. It takes the one of
the highest effective priority (``headwater.core.priority.effective``): its band (the
default for ``tasks.<queue>``, its lanes and selector topics) plus one for each
``aging_s`` it has waited since the coordinator sent it (its Kafka timestamp), the
older first at equal priority. So a high dispatch sent after low ones goes first, and
a low one that waited ``aging_s`` for each band between them goes before a high one
just sent: none waits for ever while higher ones keep coming.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Generic, Protocol, TypeVar

from headwater.core.priority import DEFAULT, effective
from headwater.topics import Topics


class Fetched(Protocol):
    """What the choice reads of a fetched record (aiokafka's ``ConsumerRecord``)."""

    @property
    def topic(self) -> str: ...

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...


P = TypeVar("P", bound=Hashable)
R = TypeVar("R", bound=Fetched)


class Ranking:
    """The effective priority of a fetched dispatch.

    Args:
        topics: the deployment's topic names (a priority topic's name holds its band).
        aging_s: the wait worth one band, seconds (``HEADWATER_PRIORITY_AGING_S``).
    """

    def __init__(self, topics: Topics, aging_s: float) -> None:
        self.topics = topics
        self.aging_s = aging_s
        self._bands: dict[str, int] = {}

    def band(self, topic: str) -> int:
        """The band of the dispatches on ``topic``: a priority topic's, else the
        default."""
        band = self._bands.get(topic)
        if band is None:
            parsed = self.topics.parse_priority(topic)
            band = self._bands[topic] = DEFAULT if parsed is None else parsed[1]
        return band

    def __call__(self, record: Fetched, now_ms: int) -> float:
        """``record``'s effective priority at ``now_ms`` (ms since the epoch)."""
        return effective(self.band(record.topic), now_ms - record.timestamp, self.aging_s)


class Held(Generic[P, R]):
    """Fetched records not taken yet, per partition, in offset order.

    Args:
        rank: a record's effective priority at a time (``Ranking``).
    """

    def __init__(self, rank: Callable[[R, int], float]) -> None:
        self.rank = rank
        self._by_partition: dict[P, deque[R]] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, batches: Mapping[P, Iterable[R]]) -> None:
        """Hold the records of ``batches`` (partition -> records in offset order, each
        after those held of its partition)."""
        for partition, records in batches.items():
            held = self._by_partition.setdefault(partition, deque())
            before = len(held)
            held.extend(records)
            self._count += len(held) - before

    def partitions(self) -> set[P]:
        """The partitions with records held."""
        return set(self._by_partition)

    def pop_best(self, now_ms: int) -> tuple[P, R] | None:
        """Take the first held record of the partition whose first is of the highest
        effective priority at ``now_ms`` (the older first at equal priority); None when
        nothing is held."""
        best: tuple[float, int, P] | None = None
        for partition, held in self._by_partition.items():
            head = held[0]
            rank = self.rank(head, now_ms)
            if best is None or rank > best[0] or (rank == best[0]
                                                   and head.timestamp < best[1]):
                best = (rank, head.timestamp, partition)
        if best is None:
            return None
        partition = best[2]
        held = self._by_partition[partition]
        record = held.popleft()
        if not held:
            del self._by_partition[partition]
        self._count -= 1
        return partition, record

    def drop(self, partitions: Iterable[P] | None = None) -> dict[P, int]:
        """Forget what is held of ``partitions`` (default: everything): they were
        revoked, or the worker takes nothing more; their records, never committed, go
        to whoever reads the partition next.

        Returns:
            Each partition that held records -> the offset of its first one (where to
            read it again from).
        """
        first: dict[P, int] = {}
        for partition in list(self._by_partition) if partitions is None else partitions:
            held = self._by_partition.pop(partition, None)
            if held is not None:
                self._count -= len(held)
                first[partition] = held[0].offset
        return first
