"""The gateway's view of the workers: their last announcements on the workers topic
(``services.worker.announce``), read in the background with ``TopicReader``.

Liveness is judged on the gateway's clock, not the workers': a record read while
following the topic counts as heard when it was read; one read while catching up with
the topic's past (at start, or after the reader reconnects) as heard at its own
``at_ms``, never later than now. So a worker's clock being off matters only for the
records of the catch-up, and a worker that died long ago is not live again because the
gateway read its last record just now.

Besides who is live, the registry remembers when each ``(queue, task)`` was last heard
served (``last_served``: the last announcement of a worker serving it, stopping or not,
when it was heard): admission refuses a task only once no worker has served it for the
registry's horizon (``unserved_after_s``), so a queue whose only worker restarts (a
deploy) is not refused meanwhile; likewise each set of tags a worker of a queue
announced (``last_tagged``, ``tags_lately``), by which admission refuses a node whose
``requires`` no worker matches. The status views go by the live workers alone.

Announcements are trusted input (protect the topic with Kafka ACLs in production), but
a forged one steers admission less: liveness counts intervals of at most a minute
(``announce.MAX_LIVE_INTERVAL_MS``), a record keyed by another worker than its own is
ignored (logged once per key), and so is one naming more than ``MAX_TASKS`` tasks or
announcing tags that are none (``headwater.core.selectors``).

The registry also says when each worker was last heard (``last_heard``), those whose
tombstone it read included (``gone``, the latest ``MAX_GONE``), and whether it is
``lost``: known, and not heard within ``LIVE_INTERVALS`` of its intervals (SIGKILLed), or
gone. The run view marks the running attempts of a lost worker (``queues.marks``).

One registry serves one gateway process: the one running is ``installed()`` (the
submission's admission and the workflow view ask it; None before the gateway connects).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiokafka import ConsumerRecord, TopicPartition

from headwater.core.selectors import MAX_TAGS, TAG_PATTERN, tag_fault
from services.common.clock import now_ms
from services.common.settings import CommonSettings
from services.common.topic_reader import TopicReader
from services.worker.announce import (
    WorkerAnnounced,
    decode_announcement,
    ensure_workers_topic,
    is_heard,
    is_live,
)

log = logging.getLogger("headwater.gateway")

RECONNECT_S = 1.0
"""How long the reader waits after losing Kafka before it reads again, seconds."""
PROBE_S = 1.0
"""How often the reader asks for the topic's end offsets while following, seconds."""
UNSERVED_AFTER_S = 60.0
"""The default horizon (``Settings.unserved_after_s``), seconds."""
FRESH_S = 3.0
"""How long the registry counts as up to date after the reader last proved it had read
the topic to an end offset the broker gave, seconds (``fresh``)."""
MAX_TASKS = 10_000
"""The most tasks one announcement may name; one naming more is ignored (logged)."""
MAX_MISKEYED_LOGGED = 1000
"""How many keys of records naming another worker are logged (once each)."""
MAX_GONE = 10_000
"""How many workers whose tombstone was read are remembered (``gone``), the latest."""


@dataclass(frozen=True)
class Heard:
    """A worker's last announcement and when the gateway heard it (ms since the epoch,
    the gateway's clock)."""

    record: WorkerAnnounced
    heard_at_ms: int


class WorkerRegistry:
    """Every worker's last announcement, kept up to date by a background reader.

    Args:
        settings: Kafka settings and the topic names.
        grace_s: how long after :meth:`start` the registry is not trusted to know every
            live worker (``trusted``), seconds: a worker started with the gateway may not
            have announced itself yet.
        unserved_after_s: the horizon of ``serving_lately``, seconds.
    """

    def __init__(self, settings: CommonSettings, grace_s: float,
                 unserved_after_s: float = UNSERVED_AFTER_S) -> None:
        self.settings = settings
        self.grace_s = grace_s
        self.unserved_after_s = unserved_after_s
        self.heard: dict[str, Heard] = {}
        self.gone: dict[str, Heard] = {}
        self.last_served: dict[tuple[str, str], int] = {}
        self.last_tagged: dict[tuple[str, tuple[str, ...]], int] = {}
        """(queue, tags) -> when a worker of the queue announcing those tags was last
        heard (workers without tags are not kept)."""
        self.caught_up = False
        self.started_at_s = math.inf
        self.fresh_at_s = -math.inf
        self.fresh_at_ms = 0
        self._miskeyed: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self.listeners: list[Callable[[WorkerAnnounced], None]] = []
        """Called with each announcement taken (the registrar of announced workflows,
        ``definitions.announced``)."""

    def start(self) -> None:
        """Start reading in the background (from the event loop)."""
        self.started_at_s = time.monotonic()
        self._task = asyncio.create_task(self._read())

    async def stop(self) -> None:
        """Stop reading."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def fresh(self) -> bool:
        """Whether the reader read the topic to an end offset the broker gave it less than
        ``FRESH_S`` ago (not so while Kafka is unreachable, or the reader lags)."""
        return time.monotonic() - self.fresh_at_s < FRESH_S

    @property
    def trusted(self) -> bool:
        """Whether a queue without live workers may be refused: the topic was read to its
        end, the reader is ``fresh`` and the grace after start is over."""
        return (self.caught_up and self.fresh
                and time.monotonic() - self.started_at_s >= self.grace_s)

    def _as_of(self, now: int | None) -> int:
        """The time liveness is judged at, ms: ``now`` (default: the clock), or the last
        time the registry was ``fresh`` if it is not (workers do not die of the gateway
        losing Kafka)."""
        at = now_ms() if now is None else now
        return min(at, self.fresh_at_ms) if not self.fresh and self.fresh_at_ms else at

    def live(self, now: int | None = None) -> list[WorkerAnnounced]:
        """The live workers' last announcements, by worker id (judged ``_as_of`` now)."""
        at = self._as_of(now)
        return [h.record for _, h in sorted(self.heard.items())
                if is_live(h.record, h.heard_at_ms, at)]

    def serving(self, now: int | None = None) -> dict[str, set[str]]:
        """Queue -> the tasks its live workers serve (a queue with live workers serving
        nothing maps to an empty set)."""
        found: dict[str, set[str]] = {}
        for record in self.live(now):
            found.setdefault(record.queue, set()).update(record.tasks)
        return found

    def serving_lately(self, now: int | None = None) -> dict[str, set[str]]:
        """``serving`` and, besides, the tasks a worker of the queue was heard serving
        less than ``unserved_after_s`` ago (``last_served``; older entries are dropped
        when judged at the clock's now): what admission refuses by."""
        found = self.serving(now)
        horizon = self._as_of(now) - self.unserved_after_s * 1000
        for (queue, task), at in list(self.last_served.items()):
            if at > horizon:
                found.setdefault(queue, set()).add(task)
            elif now is None:
                del self.last_served[(queue, task)]
        return found

    def live_tags(self, now: int | None = None) -> dict[str, set[tuple[str, ...]]]:
        """Queue -> the sets of tags its live workers announce (each worker's, sorted):
        what a dispatched attempt that requires tags can be taken by now."""
        found: dict[str, set[tuple[str, ...]]] = {}
        for record in self.live(now):
            found.setdefault(record.queue, set()).add(record.tags)
        return found

    def tags_lately(self, now: int | None = None) -> dict[str, set[tuple[str, ...]]]:
        """Queue -> the sets of tags its live workers announce (each worker's, sorted)
        and, besides, those a worker of the queue was heard announcing less than
        ``unserved_after_s`` ago (``last_tagged``; older entries are dropped when judged
        at the clock's now): what admission judges a node's ``requires`` by."""
        found = self.live_tags(now)
        horizon = self._as_of(now) - self.unserved_after_s * 1000
        for (queue, tags), at in list(self.last_tagged.items()):
            if at > horizon:
                found.setdefault(queue, set()).add(tags)
            elif now is None:
                del self.last_tagged[(queue, tags)]
        return found

    def last_heard(self, worker_id: str) -> int | None:
        """When ``worker_id`` was last heard (its last announcement, or its tombstone),
        ms since the epoch on the gateway's clock; None: never heard of."""
        found = self.heard.get(worker_id) or self.gone.get(worker_id)
        return None if found is None else found.heard_at_ms

    def lost(self, worker_id: str, now: int | None = None) -> bool:
        """Whether ``worker_id`` is gone without finishing its work: known to the
        registry, and either not heard within ``LIVE_INTERVALS`` of its intervals
        (SIGKILLed; a stopping worker draining its attempts still announces) or stopped
        for good (its tombstone read). False for a worker never heard of (a child
        workflow's attempt names its child, not a worker), and until the registry is
        ``trusted``."""
        if not self.trusted:
            return False
        if worker_id in self.gone and worker_id not in self.heard:
            return True
        found = self.heard.get(worker_id)
        return found is not None and not is_heard(found.record, found.heard_at_ms,
                                                  self._as_of(now))

    def lost_workers(self, now: int | None = None) -> list[Heard]:
        """The workers heard within the horizon (``unserved_after_s``) that stopped
        announcing without a stopping record or a tombstone (SIGKILLed, frozen), by id:
        what ``GET /v1/queues`` lists as ``lost_workers``."""
        at = self._as_of(now)
        horizon = at - self.unserved_after_s * 1000
        return [h for _, h in sorted(self.heard.items())
                if not h.record.stopping and h.heard_at_ms > horizon
                and not is_heard(h.record, h.heard_at_ms, at)]

    def queues(self) -> set[str]:
        """Every queue a worker announced (live or not)."""
        return {h.record.queue for h in self.heard.values()}

    def take(self, record: ConsumerRecord, following: bool) -> None:
        """Apply one record of the workers topic (a tombstone forgets its worker)."""
        try:
            announced = decode_announcement(record.value)
        except Exception as e:
            log.warning("skipping record %d of the workers topic: %s", record.offset, e)
            return
        key = (record.key or b"").decode(errors="replace")
        now = now_ms()
        if announced is None:
            left = self.heard.pop(key, None)
            if left is not None:
                self._forget(key, Heard(left.record, now if following
                                        else min(now, record.timestamp)))
            return
        if not self._acceptable(record.offset, key, announced):
            return
        heard_at = now if following else min(now, announced.at_ms)
        self.gone.pop(announced.worker_id, None)
        self.heard[announced.worker_id] = Heard(announced, heard_at)
        for task in announced.tasks:
            key_served = (announced.queue, task)
            self.last_served[key_served] = max(heard_at, self.last_served.get(key_served, 0))
        if announced.tags:
            key_tagged = (announced.queue, announced.tags)
            self.last_tagged[key_tagged] = max(heard_at, self.last_tagged.get(key_tagged, 0))
        for listener in self.listeners:
            listener(announced)

    def _forget(self, worker_id: str, last: Heard) -> None:
        """Remember a worker whose tombstone was read (the latest ``MAX_GONE``)."""
        self.gone[worker_id] = last
        while len(self.gone) > MAX_GONE:
            del self.gone[next(iter(self.gone))]

    def _acceptable(self, offset: int, key: str, announced: WorkerAnnounced) -> bool:
        """Whether an announcement may count: keyed by its own worker id (compaction keeps
        one record per key, so another key would outlive that worker's tombstone; logged
        once per key), naming at most ``MAX_TASKS`` tasks and at most
        ``selectors.MAX_TAGS`` tags, each one a tag (logged)."""
        if key != announced.worker_id:
            if key not in self._miskeyed and len(self._miskeyed) < MAX_MISKEYED_LOGGED:
                self._miskeyed.add(key)
                log.warning("ignoring announcements of the workers topic keyed %r: they "
                            "name worker %r (offset %d); is someone else producing to the "
                            "topic?", key[:200], announced.worker_id[:200], offset)
            return False
        if len(announced.tasks) > MAX_TASKS:
            log.warning("ignoring record %d of the workers topic: worker %r names %d tasks, "
                        "more than %d", offset, key[:200], len(announced.tasks), MAX_TASKS)
            return False
        if len(announced.tags) > MAX_TAGS or any(tag_fault(t) for t in announced.tags):
            log.warning("ignoring record %d of the workers topic: worker %r announces "
                        "tags that are not %d tags at most, each matching %s", offset,
                        key[:200], MAX_TAGS, TAG_PATTERN.pattern)
            return False
        return True

    async def _read(self) -> None:
        """Catch up with the topic, then follow it; start again after a Kafka error."""
        while True:
            try:
                await ensure_workers_topic(self.settings, timeout_s=math.inf)
                async with TopicReader(self.settings.bootstrap,
                                       max_message_bytes=self.settings.max_message_bytes) as reader:
                    await self._catch_up_and_follow(reader)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("reading the workers topic failed (%r); reading it again", e)
            await asyncio.sleep(RECONNECT_S)

    async def _catch_up_and_follow(self, reader: TopicReader) -> None:
        topic = self.settings.topics.workers
        partitions = await reader.partitions(topic, wait_s=30.0)
        end = await reader.end_offsets(topic, partitions)
        async for batch in reader.batches(topic, {}, end):
            for record in batch:
                self.take(record, following=False)
        self.caught_up = True
        self._mark_fresh()
        probe = asyncio.create_task(self._probe(reader, topic, end))
        try:
            async for batch in reader.follow(topic, end, timeout_s=math.inf):
                for record in batch:
                    self.take(record, following=True)
        finally:
            probe.cancel()

    def _mark_fresh(self) -> None:
        self.fresh_at_s, self.fresh_at_ms = time.monotonic(), now_ms()

    async def _probe(self, reader: TopicReader, topic: str, end: dict[int, int]) -> None:
        """Every ``PROBE_S``: fresh when the reader's position reached the end offsets of
        the previous probe (it read what was there a second ago) and the broker answers."""
        tps = {p: TopicPartition(topic, p) for p in end}
        while True:
            await asyncio.sleep(PROBE_S)
            try:
                reached = all([await reader.consumer.position(tp) >= end[p]
                               for p, tp in tps.items()])
                end = await asyncio.wait_for(reader.end_offsets(topic, end), PROBE_S * 2)
            except Exception as e:  # Kafka unreachable: not fresh until it answers again
                log.debug("probing the workers topic: %r", e)
                continue
            if reached:
                self._mark_fresh()


_installed: list[WorkerRegistry] = []


def install(registry: WorkerRegistry | None) -> None:
    """Make ``registry`` the one ``installed()`` returns (None: none)."""
    _installed[:] = [registry] if registry is not None else []


def installed() -> WorkerRegistry | None:
    """The running gateway's registry, or None (not connected yet, or in a test)."""
    return _installed[0] if _installed else None


def served(serving: Mapping[str, set[str]], task: str) -> list[str]:
    """The queues whose live workers serve ``task``, sorted."""
    return sorted(q for q, tasks in serving.items() if task in tasks)
