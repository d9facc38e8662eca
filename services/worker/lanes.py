"""Which lanes a worker reads: its own, and those of other code versions that no live
worker serves and that are not newer than its own (adoption).

A run of a code workflow that recorded its ``code_version`` sends its activations, and
its task steps on its own queue, to the lane of that version (``Topics.lane``;
``services.coordinator.records.dispatch_topic``), so that a rolling deploy does not
bounce a run between the old code and the new: a step task only the new code has
does not fail on an old worker, and an activation does not replay on code that
decides otherwise. A worker serving ``@workflow`` W at version V reads
``tasks.<queue>`` and the lane of (queue, W, V), in its queue's one consumer group:
Kafka's round-robin assignor (aiokafka's default) gives a topic's partitions only to
members subscribed to it, so a lane goes to the workers of its version alone.

A lane whose version no live worker serves (its workers stopped for good: the old
code after a deploy) would hold its runs for ever; so each worker also reads the
lanes of the workflows it serves at other versions while no live worker of the queue
announces that (workflow, version), and stops once one does again; never a lane of
code whose first worker started after the first of its own (newer code, whose workers may be
restarting: its runs may call tasks the older code lacks). The new code then
runs old runs: behind ``wf.patched`` it takes the old path; a change that is not
deterministic is caught as ever (``NondeterminismError``: the attempt fails and is
retried, the run is not failed). Liveness is the gateway's (``WorkerRegistry``:
announcements within ``LIVE_INTERVALS`` of their interval, a stopping worker not
live). Lanes are found in the topic list (``listing``, the worker's one listing): a
lane exists once a dispatch was sent to it (the coordinator creates it) or a worker
of its version started.

Which workers read a lane cannot change a run's outcome, only which code replays it
(the choice of topic is a function of the run's history): adoption is the consumers'
business. Changing a subscription rebalances the queue's group, so the set is
compared every ``lanes_s`` seconds and the consumer subscribed again only when it
changed; a lane is adopted once it was seen unserved on two looks in a row
(``settled``), and a worker starts on its own lanes alone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping

from headwater.announcement import AnnouncedWorkflow, WorkerAnnounced
from headwater.topics import Topics
from services.gateway.queues.workers import WorkerRegistry
from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")

CATCH_UP_S = 10.0
"""How long a worker waits at start for the workers topic to be read to its end before
it subscribes with its own lanes alone (adopting later, if it must), seconds."""


def lanes_to_serve(topics: Topics, queue: str, own: Mapping[str, str],
                   live: Iterable[WorkerAnnounced], existing: Iterable[str],
                   newer: Iterable[str] = ()) -> frozenset[str]:
    """The lanes a worker of ``queue`` reads: its own, and each existing lane of a
    workflow it serves at a version no live worker of the queue announces, unless that
    version is newer than its own code.

    Args:
        topics: the deployment's topic names.
        queue: the worker's queue.
        own: the workflows it serves -> its code version of each.
        live: the live workers' last announcements (itself among them or not).
        existing: topic names (every topic the broker lists will do).
        newer: lanes of code first started after this worker (``Lanes.newer``): a
            run of newer code may call tasks the older code lacks, and its workers
            being away for a moment (a restart) is no reason to run it on old code.
    """
    mine = {topics.lane(queue, w, v) for w, v in own.items()}
    served = {topics.lane(queue, a.name, a.code_version)
              for r in live if r.queue == queue for a in r.workflows}
    heads = [topics.lanes_of(queue, w) for w in own]
    skipped = served | set(newer)
    adopted = {t for t in existing for h in heads
               if t.startswith(h) and "." not in t[len(h):] and t not in skipped}
    return frozenset(mine | adopted)


def settled(wanted: frozenset[str], current: frozenset[str], mine: frozenset[str],
            unserved_since: Mapping[str, float], now: float, grace_s: float,
            ) -> tuple[frozenset[str], dict[str, float]]:
    """The lanes to read after one look, with a grace before adopting: a lane of
    another version is taken up once it was seen unserved for ``grace_s`` (on two
    looks at least), and left at once when it is served again.

    A worker announces itself before it creates its lanes, but a peer may list a new
    lane before it has read that announcement: without the grace it would adopt the
    lane for a moment, and run a step of a new run on its own (other) code.

    Args:
        wanted: ``lanes_to_serve`` now.
        current: the lanes read now.
        mine: the worker's own lanes.
        unserved_since: lane -> when it was first seen unserved (monotonic seconds),
            from the last look.
        now: the time of this look (monotonic seconds).
        grace_s: how long a lane must stay unserved before it is adopted, seconds.

    Returns:
        The lanes to read, and ``unserved_since`` for the next look.
    """
    since = {lane: unserved_since.get(lane, now) for lane in wanted - mine}
    ready = {lane for lane, at in since.items() if lane in current or now - at >= grace_s}
    return frozenset(mine | ready), since


def own_versions(workflows: Iterable[AnnouncedWorkflow]) -> dict[str, str]:
    """Workflow name -> code version, of what a worker announces."""
    return {w.name: w.code_version for w in workflows}


class Lanes:
    """Follows the workers topic, and the topic list it is shown; says which lanes to
    read now.

    Use ``async with`` around the time the worker serves (it reads the workers topic
    meanwhile). Each topic list it is shown (``listing``, every ``lanes_s`` seconds)
    settles the lanes to read (:meth:`see`).

    Args:
        settings: the worker's settings (queue, topics, Kafka, ``lanes_s``).
        own: the workflows it serves -> its code version of each (not empty).
    """

    def __init__(self, settings: Settings, own: Mapping[str, str]) -> None:
        self.settings = settings
        self.topics = settings.topics
        self.own = dict(own)
        self.mine = lanes_to_serve(self.topics, settings.queue, self.own, (), ())
        self.registry = WorkerRegistry(settings, grace_s=0.0)
        self.current: frozenset[str] = self.mine
        self.unserved_since: dict[str, float] = {}
        self.started_ms = int(time.time() * 1000)
        self.first_started: dict[str, int] = {}
        """Lane -> the earliest start of a worker announcing its version (its clock)."""
        self.registry.listeners.append(self.heard)

    def heard(self, announced: WorkerAnnounced) -> None:
        """Note when the code of each lane an announcement serves was first started."""
        if announced.queue != self.settings.queue:
            return
        for w in announced.workflows:
            lane = self.topics.lane(announced.queue, w.name, w.code_version)
            first = self.first_started.get(lane, announced.started_at_ms)
            self.first_started[lane] = min(first, announced.started_at_ms)

    def newer(self) -> set[str]:
        """Lanes of other code whose first worker started after the first of this
        worker's own code (this one, or an earlier worker of its version still
        announced): newer code, never adopted. A worker restarting does not make its
        code newer than code started meanwhile; a rollback's older workers, all started
        later, do adopt the lanes of the code rolled back."""
        own = min([self.started_ms, *(self.first_started.get(lane, self.started_ms)
                                      for lane in self.mine)])
        return {lane for lane, at in self.first_started.items()
                if at > own and lane not in self.mine}

    async def __aenter__(self) -> Lanes:
        """Read the workers topic to its end (up to ``CATCH_UP_S``): the worker starts
        on its own lanes (:attr:`current`), and the first topic list it is shown then
        starts the grace of the lanes found unserved."""
        self.registry.start()
        deadline = time.monotonic() + CATCH_UP_S
        while not self.registry.caught_up and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if not self.registry.caught_up:
            log.warning("the workers topic was not read within %g s: reading this "
                        "worker's own lanes alone for now", CATCH_UP_S)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.registry.stop()

    def wanted(self, existing: Iterable[str]) -> frozenset[str]:
        """The lanes to read now (``lanes_to_serve`` over the live workers and
        ``existing``, the topics the broker lists)."""
        return lanes_to_serve(self.topics, self.settings.queue, self.own,
                              self.registry.live(), existing, self.newer())

    def see(self, existing: frozenset[str]) -> bool:
        """Settle :attr:`current` by ``existing`` (the topics the broker lists) and what
        the announcements say now (``settled``, with a grace of one ``lanes_s``);
        whether it changed. Until the workers topic was read to its end nothing
        changes."""
        if not self.registry.caught_up:
            return False
        before = self.current
        self.current, self.unserved_since = settled(
            self.wanted(existing), self.current, self.mine, self.unserved_since,
            time.monotonic(), self.settings.lanes_s)
        if self.current == before:
            return False
        self._log_change(before, self.current)
        return True

    def _log_change(self, before: frozenset[str], after: frozenset[str]) -> None:
        """Log the lanes of other versions taken up and left."""
        taken, left = sorted(after - before - self.mine), sorted(before - after - self.mine)
        if taken:
            log.info("worker %s adopts the lanes %s: no live worker serves their code "
                     "version", self.settings.worker_id, ", ".join(taken))
        if left:
            log.info("worker %s leaves the lanes %s: their code version has a live "
                     "worker again, or they are gone", self.settings.worker_id,
                     ", ".join(left))
