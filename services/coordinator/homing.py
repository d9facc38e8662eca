"""Records on another partition than their key's home: submissions and control records
are moved home; reports are dead-lettered.

Every input of a workflow must be on its home partition: murmur2 of the key (the workflow
id), as Kafka's Java client and aiokafka partition by default
(``services.common.partitioning``), since the coordinator that owns the partition owns
the workflow, and its reports and timers are keyed the same way. Other systems produce
``submissions`` and ``control`` with whatever client they have: a librdkafka-based one
(confluent-kafka, and most non-Java clients) partitions by crc32 of the key by default
(``partitioner=consistent_random``), so most of its records arrive elsewhere. Such a
record is re-produced on its home partition, with the same key, value and headers plus
``moved-from: <topic>/<partition>/<offset>``, and the original is skipped. ``reports``
are produced by Headwater's own workers, whose partitioner is right: one elsewhere is a
bug, dead-lettered with the reason (``records.misplaced``). A record that was moved once
already and still arrives elsewhere (the topic's partition count differs from the
coordinator's) is dead-lettered too, so that nothing moves round for ever.

Crash safety: the moves are carried out with the batch's other effects
(``batch.BatchApplier._carry_out``), acknowledged by the broker before the batch's
input offsets may be committed. A coordinator killed before that reads the record again
and moves it then (nothing is lost); one killed after the copy landed but before the
commit moves it a second time. The second copy is harmless, because inputs from outside
are idempotent: a submission with the same body is the same run (``idempotency.conflict``
finds no conflict, and the machine changes nothing), a signal with a ``signal_id`` is taken
once (``state.signal_ids``), a cancel of a cancelled workflow and a timer that has fired
change nothing. A signal sent without a ``signal_id`` has no such check, for the same
reason a Kafka producer's own retry can deliver it twice: senders that need at-most-once
signals give each one an id (the gateway always does).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from headwater.topics import Topics
from services.common.kafka.client import header
from services.coordinator.records import DeadLetter, InputRecord, Outgoing, misplaced

log = logging.getLogger(__name__)

MOVED_FROM_HEADER = "moved-from"
"""Header of a record moved to its home partition: where it was,
``<topic>/<partition>/<offset>``."""


@dataclass(frozen=True)
class Move:
    """An input record to re-produce on its home partition.

    Attributes:
        record: the record as consumed (on the wrong partition).
        home: the partition of its key (murmur2, the coordinator's partition count).
    """

    record: InputRecord
    home: int

    @property
    def origin(self) -> str:
        """Where the record was: ``<topic>/<partition>/<offset>``."""
        r = self.record
        return f"{r.topic}/{r.partition}/{r.offset}"

    def headers(self) -> list[tuple[str, bytes]]:
        """The record's headers, then ``moved-from``."""
        return [*self.record.headers, (MOVED_FROM_HEADER, self.origin.encode())]


@dataclass
class MoveCount:
    """Records moved home since the process started.

    Attributes:
        total: all of them.
        by_topic: per input topic (``<prefix>.submissions``, ``<prefix>.control``).
    """

    total: int = 0
    by_topic: dict[str, int] = field(default_factory=dict)

    def add(self, topic: str) -> None:
        """Count one record moved from ``topic``."""
        self.total += 1
        self.by_topic[topic] = self.by_topic.get(topic, 0) + 1


MOVED = MoveCount()
"""The coordinator's count of records moved home (each move's log line shows the total).
A metrics exporter reads it here: ``headwater_coordinator_records_moved_total`` by topic."""


def movable(topics: Topics, topic: str) -> bool:
    """Whether a record of ``topic`` on another partition than its key's is moved home
    (``submissions`` and ``control``, which other systems produce) rather than
    dead-lettered (``reports``, which only Headwater's workers produce)."""
    return topic in (topics.submissions, topics.control)


def sort_out(topics: Topics, record: InputRecord, workflow_id: str, home: int,
             moves: list[Move], dead: list[DeadLetter]) -> None:
    """Add a record found on another partition than ``home`` to ``moves`` or ``dead``.

    Args:
        topics: the deployment's topic names.
        record: the input record, decoded (its key is ``workflow_id``).
        workflow_id: the record's workflow.
        home: the partition of ``workflow_id``; differs from ``record.partition``.
        moves: the batch's moves, appended to.
        dead: the batch's dead letters, appended to.
    """
    reason = misplaced(record.topic, record.partition, workflow_id, home)
    moved_before = header(record.headers, MOVED_FROM_HEADER)
    if moved_before is not None:
        dead.append(DeadLetter(record, f"{reason}; it was moved from {moved_before} "
                               "already: does the topic have as many partitions as "
                               "HEADWATER_PARTITIONS says?"))
    elif movable(topics, record.topic):
        moves.append(Move(record, home))
    else:
        dead.append(DeadLetter(record, reason))


class Sender(Protocol):
    """Sends one record to a given partition, or dead letters (``bus.FaustBus``)."""

    async def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int,
                   headers: list[tuple[str, bytes]]) -> Awaitable[Any]:
        """Queue it; the awaitable returned resolves once the broker acknowledged it."""

    def too_large(self, key: bytes | None, value: bytes | None,
                  headers: list[tuple[str, bytes]]) -> str | None:
        """Why the producer would refuse the record (its size and the limit); None if it
        fits."""

    async def publish(self, records: list[Outgoing], dead: list[DeadLetter]) -> None:
        """Send records and dead letters; return once the broker acknowledged them."""


def _too_large_reason(move: Move, why: str) -> str:
    r = move.record
    where = misplaced(r.topic, r.partition, (r.key or b"").decode(errors="replace"), move.home)
    return f"{where}; it cannot be moved there: with its moved-from header it is {why}"


async def carry_out(sender: Sender, moves: Sequence[Move]) -> None:
    """Re-produce each moved record on its home partition, wait for every ack, then
    count and log each move (WARNING: the key, both partitions, the total so far).

    A record that would not fit the producer's limit with its ``moved-from`` header (one
    just under it where it was) is dead-lettered with the reason instead: the producer
    would refuse it (``MessageSizeTooLargeError``) and fail the batch, again on every
    restart.

    Raises:
        Exception: the producer's error; the batch must then not be committed.
    """
    if not moves:
        return
    fitting: list[Move] = []
    dead: list[DeadLetter] = []
    for m in moves:
        why = sender.too_large(m.record.key, m.record.value, m.headers())
        if why is None:
            fitting.append(m)
        else:
            dead.append(DeadLetter(m.record, _too_large_reason(m, why)))
    # Queued one by one, in order (a partition's records keep their order), then awaited.
    acks = [await sender.send(m.record.topic, m.record.key, m.record.value, m.home,
                              m.headers()) for m in fitting]
    await asyncio.gather(sender.publish([], dead), *acks)
    for m in fitting:
        MOVED.add(m.record.topic)
        log.warning("moved %s (key %r) from partition %d to its home partition %d "
                    "(%d records moved so far): its producer partitions by another hash "
                    "than murmur2 of the key", m.origin, (m.record.key or b"").decode(
                        errors="replace"), m.record.partition, m.home, MOVED.total)
