"""The consuming side of a worker: take dispatches while slots are free, keep polling
while none is, commit what no longer needs redelivery, and survive rebalances.

A taken dispatch holds a slot until its attempt has ended (its threads returned), but
its offset may be committed much earlier: as soon as its ``TaskStarted`` is acknowledged
(the lease model, see ``lifecycle``), or at once when it is skipped. So a worker that dies
mid-attempt does not get its attempts delivered again; the coordinator retries them.

The poll loop must never block on task code. While every slot stays busy the intake
pauses the assigned partitions and keeps calling ``getmany`` (which then returns
nothing), so that the consumer group does not take the worker for dead after
``max.poll.interval.ms``: that would only cost a rebalance now (its started dispatches
are committed), but a rebalance stalls the whole group. Partitions are resumed as soon
as a slot is free.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from services.worker.offsets import OffsetTracker

log = logging.getLogger("headwater.worker")

POLL_MS = 100
"""How long one poll waits for records while a slot is free, milliseconds."""
BUSY_POLL_S = 1.0
"""How long the intake waits for a free slot (or an offset to commit) before it polls
(paused) again, seconds."""

Taken = list[tuple[TopicPartition, ConsumerRecord]]


class Intake:
    """Dispatch records for at most ``slots`` attempts at once.

    Args:
        consumer: the queue's consumer (subscribe it with :attr:`listener`).
        slots: attempts run at once.
    """

    def __init__(self, consumer: AIOKafkaConsumer, slots: int) -> None:
        self.consumer = consumer
        self.slots = slots
        self.running = 0
        self.tracker: OffsetTracker[TopicPartition] = OffsetTracker()
        self.listener = _Rebalance(self)
        self.taking = True
        self.left = False
        self._wake = asyncio.Event()

    @property
    def full(self) -> bool:
        """Whether every slot is busy."""
        return self.running >= self.slots

    async def take(self) -> Taken:
        """Poll once and take what fits in the free slots (each taken record holds a slot
        until :meth:`release`). With no slot free, wait up to ``BUSY_POLL_S`` for one (or
        for an offset to commit); if none frees, pause every partition and poll anyway,
        to stay in the group.

        Returns:
            ``(partition, record)`` pairs, in offset order per partition; often empty,
            and always once :meth:`stop_taking` was called.
        """
        if not self.taking:
            return []
        if not self.full:
            self._resume()
            free = self.slots - self.running
            return self._admit(await self.consumer.getmany(timeout_ms=POLL_MS,
                                                           max_records=free))
        # ``asyncio.timeout``, not ``wait_for``: on Python 3.11, ``wait_for`` returns the
        # result, swallowing a cancel (the worker stopping) that arrives as the wake-up
        # does, and ``serve`` would then poll on forever.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(BUSY_POLL_S):
                await self._wake.wait()
        self._wake.clear()  # after waiting: a wake-up while the loop was away counts
        if not self.full:
            return []  # short tasks: records fetched ahead stay buffered (not paused)
        self.pause()
        # Returns nothing for paused partitions; it tells the group this member is alive.
        return self._admit(await self.consumer.getmany(timeout_ms=0))

    def committable(self, tp: TopicPartition, offset: int) -> None:
        """A taken record needs no redelivery (its ``TaskStarted`` was acknowledged, or
        it was skipped or dead-lettered): the commit may pass it. A record never marked
        so stays uncommitted, and is delivered again after a restart or rebalance."""
        self.tracker.finished(tp, offset)
        self._wake.set()  # commit soon, even while every slot is busy

    def stop_taking(self) -> None:
        """Take nothing more (the worker is stopping): pause every partition, wake a
        :meth:`take` that waits for a slot, and give back what a poll returns from now
        on (it stays uncommitted, for the partition's next owner)."""
        self.taking = False
        self.pause()
        self._wake.set()

    async def settled(self, timeout_s: float) -> int:
        """Wait until no taken record still needs redelivery (each started attempt's
        ``TaskStarted`` is acknowledged, or its attempt ended), or ``timeout_s`` passed.

        Returns:
            How many taken records still need redelivery (0 once settled).
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while self.tracker.in_flight:
                    self._wake.clear()
                    await self._wake.wait()
        return self.tracker.in_flight

    async def leave(self) -> None:
        """Commit what is committable, then leave the consumer group (the consumer
        stops): the group rebalances at once, and the partitions' next owners get every
        record not committed here. Commits after this do nothing."""
        await self.commit()
        self.left = True
        await self.consumer.stop()

    def release(self) -> None:
        """A taken record's attempt has ended: its slot is free."""
        self.running -= 1
        self._wake.set()

    def pause(self, partitions: set[TopicPartition] | None = None) -> None:
        """Stop fetching from ``partitions`` (default: every assigned one)."""
        partitions = self.consumer.assignment() if partitions is None else partitions
        fresh = set(partitions) - set(self.consumer.paused())
        if fresh:
            log.debug("every slot is busy: pausing %s", sorted(fresh))
            self.consumer.pause(*fresh)

    async def commit(self) -> None:
        """Commit the offsets that are safe to commit. Never raises a Kafka error: after a
        rebalance (``CommitFailedError``) the records go to the partitions' new owner,
        and the coordinator ignores reports of an attempt it already has."""
        offsets = self.tracker.committable()
        if not offsets or self.left:
            return
        try:
            await self.consumer.commit(offsets)
        except KafkaError as e:
            log.warning("committing %s failed (%s: %s); uncommitted dispatches will be "
                        "delivered again", offsets, type(e).__name__, e)
            return
        self.tracker.mark_committed(offsets)

    def _resume(self) -> None:
        paused = self.consumer.paused()
        if paused:
            self.consumer.resume(*paused)

    def _admit(self, batches: dict[TopicPartition, list[ConsumerRecord]]) -> Taken:
        taken: Taken = []
        for tp, records in batches.items():
            for record in records:
                if self.full or not self.taking:
                    # From a partition assigned while paused, or fetched as the worker
                    # began to stop: give the rest back.
                    self.consumer.seek(tp, record.offset)
                    break
                self.running += 1
                self.tracker.started(tp, record.offset)
                taken.append((tp, record))
        return taken


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    """Commits before partitions go, forgets them, and pauses new ones while busy."""

    def __init__(self, intake: Intake) -> None:
        self.intake = intake

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self.intake.commit()
        self.intake.tracker.forget(list(revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        if self.intake.full or not self.intake.taking:
            self.intake.pause(set(assigned))
