"""The consuming side of a worker: take dispatches while slots are free, keep polling
while none is, commit what no longer needs redelivery, and survive rebalances.

A taken dispatch holds a slot until its attempt has ended (its threads returned), but
its offset may be committed much earlier: as soon as its ``TaskStarted`` is acknowledged
(the lease model, see ``lifecycle``), or at once when it is skipped. So a worker that dies
mid-attempt does not get its attempts delivered again; the coordinator retries them.
Commits go in the background, coalesced (``commits``), except before partitions are
revoked, before the worker leaves its group and as it stops, where they are awaited.

The poll loop must never block on task code. While every slot stays busy the intake
keeps calling ``getmany``, so that the consumer group does not take the worker for dead
after ``max.poll.interval.ms``: that would only cost a rebalance now (its started
dispatches are committed), but a rebalance stalls the whole group.

What a poll returns is held (``held``) until a slot takes it: a free slot takes the
held record of the highest effective priority among the first held of each partition
(its band, and how long it waited), so a dispatch of a high priority sent after low ones
is taken first. A partition with records held is paused, so that the fetcher brings no
more of it (and the others are fetched with a short wait meanwhile: ``fetch_wait``), and
resumed once nothing of it is held; a partition holding nothing stays
fetched while every slot is busy (its first record must be seen to be chosen), unless
``lookahead`` records are held already: then every partition is paused. So at most about
twice ``lookahead`` records are held, never taken out of offset order within a
partition, and the commit never passes one (only taken records are tracked).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from services.common.probes import Part
from services.worker.commits import Committer
from services.worker.fetch_wait import FetchWait
from services.worker.held import Held
from services.worker.offsets import OffsetTracker
from services.worker.settings import FETCH_WAIT_MS

log = logging.getLogger("headwater.worker")

POLL_MS = 100
"""How long one poll waits for records while a slot is free, milliseconds."""
BUSY_POLL_S = 1.0
"""How long the intake waits for a free slot before it polls again, seconds."""
LOOKAHEAD = 100
"""How many fetched records the intake holds before it stops fetching (at least twice
its slots): enough to see the first record of every partition of a queue's topics."""

Taken = list[tuple[TopicPartition, ConsumerRecord]]


class Intake:
    """Dispatch records for at most ``slots`` attempts at once.

    Args:
        consumer: the queue's consumer (subscribe it with :attr:`listener`).
        slots: attempts run at once.
        rank: a fetched record's effective priority at a time, ms since the epoch
            (``held.Ranking``); default: how long it waited alone (oldest first).
        clock_ms: now, ms since the epoch (the records' timestamps are on the
            coordinator's clock).
        fetch_wait_ms: how long the broker may hold a fetch while no partition is
            paused (``HEADWATER_FETCH_WAIT_MS``; ``fetch_wait``).
    """

    def __init__(self, consumer: AIOKafkaConsumer, slots: int,
                 rank: Callable[[ConsumerRecord, int], float] | None = None,
                 clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
                 fetch_wait_ms: int = FETCH_WAIT_MS) -> None:
        self.consumer = consumer
        self.fetch_wait = FetchWait(consumer, fetch_wait_ms)
        self.slots = slots
        self.running = 0
        self.tracker: OffsetTracker[TopicPartition] = OffsetTracker()
        self.held: Held[TopicPartition, ConsumerRecord] = Held(
            rank or (lambda record, now: float(now - record.timestamp)))
        self.lookahead = max(LOOKAHEAD, 2 * slots)
        self.clock_ms = clock_ms
        self.listener = _Rebalance(self)
        self.part: Part | None = None
        """The worker's readiness (``probes``), told of each assignment and revocation."""
        self.taking = True
        self.left = False
        self.commits = Committer(self.commit)
        """Commits in the background while :meth:`committing`."""
        self._wake = asyncio.Event()  # a slot freed, or stop taking
        self._progress = asyncio.Event()  # a record needs no redelivery, or a slot freed
        self._committing = asyncio.Lock()

    @property
    def full(self) -> bool:
        """Whether every slot is busy."""
        return self.running >= self.slots

    async def take(self) -> Taken:
        """Poll and take the best held records that fit in the free slots (each taken
        record holds a slot until :meth:`release`). With no slot free, wait up to
        ``BUSY_POLL_S`` for one; if none frees, poll anyway, to stay in the group and
        to see the first records of partitions holding none. It never commits
        (:meth:`committing` does, meanwhile).

        Returns:
            ``(partition, record)`` pairs, in offset order per partition; often empty,
            and always once :meth:`stop_taking` was called.
        """
        if not self.taking:
            return []
        if not self.full:
            await self._fetch(timeout_ms=0 if len(self.held) else POLL_MS)
            taken = self._pick()
            self._pause_held()
            return taken
        # ``asyncio.timeout``, not ``wait_for``: on Python 3.11, ``wait_for`` returns the
        # result, swallowing a cancel (the worker stopping) that arrives as the wake-up
        # does, and ``serve`` would then poll on forever.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(BUSY_POLL_S):
                await self._wake.wait()
        self._wake.clear()  # after waiting: a wake-up while the loop was away counts
        if not self.full:
            return []  # a slot freed: the next take chooses among what is held
        # It tells the group this member is alive, and brings the first records of the
        # partitions holding none (paused once they hold some).
        await self._fetch(timeout_ms=0)
        self._pause_held()
        return []

    def committable(self, tp: TopicPartition, offset: int) -> None:
        """A taken record needs no redelivery (its ``TaskStarted`` was acknowledged, or
        it was skipped or dead-lettered): the commit may pass it, the next background
        one (:meth:`committing`) or an awaited one. A record never marked so stays
        uncommitted, and is delivered again after a restart or rebalance."""
        self.tracker.finished(tp, offset)
        self._progress.set()
        self.commits.soon()

    def stop_taking(self) -> None:
        """Take nothing more (the worker is stopping): pause every partition, wake a
        :meth:`take` that waits for a slot, and forget what is held and what a poll
        returns from now on (it stays uncommitted, for the partition's next owner)."""
        self.taking = False
        self.pause()
        self._give_back()
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
                    self._progress.clear()
                    await self._progress.wait()
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
        self._progress.set()

    def pause(self, partitions: set[TopicPartition] | None = None) -> None:
        """Stop fetching from ``partitions`` (default: every assigned one)."""
        partitions = self.consumer.assignment() if partitions is None else partitions
        fresh = set(partitions) - set(self.consumer.paused())
        if fresh:
            log.debug("pausing %s", sorted(fresh))
            self.consumer.pause(*fresh)
            self.fetch_wait.follow()

    @contextlib.asynccontextmanager
    async def committing(self) -> AsyncIterator[None]:
        """Commit in the background meanwhile (``commits``): soon after records become
        committable, never waited for by :meth:`take`. Leaving waits for a commit under
        way, not for what is committable since: commit that with :meth:`commit`."""
        async with self.commits.running():
            yield

    async def commit(self) -> None:
        """Commit the offsets that are safe to commit now, after a commit under way (one
        at a time, so that none overtakes a later one). Never raises a Kafka error: after
        a rebalance (``CommitFailedError``) the records go to the partitions' new owner,
        and the coordinator ignores reports of an attempt it already has."""
        async with self._committing:
            await self._commit()

    async def _commit(self) -> None:
        offsets = self.tracker.committable()
        if not offsets or self.left:
            return
        try:
            await self.consumer.commit(offsets)
        except KafkaError as e:
            log.warning("committing %s failed (%s: %s); tried again soon, and "
                        "uncommitted dispatches will be delivered again", offsets,
                        type(e).__name__, e)
            self.commits.soon()  # as the poll loop did, after the interval
            return
        self.tracker.mark_committed(offsets)

    async def _fetch(self, timeout_ms: int) -> None:
        """Poll (waiting up to ``timeout_ms`` for records) and hold what comes, then
        poll again at once while records come and fewer than ``lookahead`` are held.
        Partitions holding nothing are resumed first, unless ``lookahead`` records are
        held: then every partition is paused, and the poll only keeps the member in
        its group."""
        if len(self.held) >= self.lookahead:
            self.pause()
        else:
            self._resume_empty()
        self.fetch_wait.follow()
        batches = await self.consumer.getmany(timeout_ms=timeout_ms,
                                              max_records=self.lookahead)
        while batches:
            self.held.add(batches)
            room = self.lookahead - len(self.held)
            if room <= 0 or not self.taking:
                break
            batches = await self.consumer.getmany(timeout_ms=0, max_records=room)
        if not self.taking:
            self._give_back()  # the worker began to stop meanwhile

    def _pick(self) -> Taken:
        """Take the best held records (``held.Held.pop_best``) while a slot is free."""
        taken: Taken = []
        now = self.clock_ms()
        while self.taking and not self.full:
            best = self.held.pop_best(now)
            if best is None:
                break
            tp, record = best
            self.running += 1
            self.tracker.started(tp, record.offset)
            taken.append((tp, record))
        return taken

    def _give_back(self) -> None:
        """Forget what is held, and read each partition again from its first record
        held: never committed, it goes to the partition's next owner (or to this
        worker again)."""
        assigned = self.consumer.assignment()
        for tp, offset in self.held.drop().items():
            if tp in assigned:
                self.consumer.seek(tp, offset)

    def _pause_held(self) -> None:
        """Pause the partitions with records held: the fetcher brings no more of them
        meanwhile."""
        self.pause(self.held.partitions() & self.consumer.assignment())

    def _resume_empty(self) -> None:
        """Resume the paused partitions that hold nothing."""
        empty = set(self.consumer.paused()) - self.held.partitions()
        if empty:
            self.consumer.resume(*empty)


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    """Commits before partitions go, forgets them (what was held of them too), and
    pauses new ones while busy."""

    def __init__(self, intake: Intake) -> None:
        self.intake = intake

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if self.intake.part is not None:
            self.intake.part.rebalancing()
        await self.intake.commit()
        self.intake.tracker.forget(list(revoked))
        self.intake.held.drop(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        if self.intake.part is not None:
            self.intake.part.assigned()
        if self.intake.full or not self.intake.taking:
            self.intake.pause(set(assigned))
