"""Per-queue figures for ``GET /v1/queues`` and the admission of submissions: backlog,
the oldest waiting dispatch, live workers, and the queue's state.

The backlog of queue ``q`` is the lag of its workers' consumer group
(``Topics.worker_group(q)``) on ``Topics.tasks(q)``, on its priority topics
(``Topics.priority``: one per band of runs of another priority than the default)
and on its lanes (``Topics.lane``: where code workflows' runs send their activations
and steps, one topic per workflow and code version) and on its selector topics
(``Topics.needs``: where nodes that require tags send their dispatches, one topic per
set of tags; all read by the same group): per partition, the end offset minus the
committed offset (the log's first offset where the group committed none: its
workers start there, ``auto.offset.reset=earliest``). The oldest waiting dispatch is the
record at the committed offset of each partition with a lag: its Kafka timestamp (the
coordinator's clock when it produced the dispatch). A dispatch a worker took but whose
``TaskStarted`` is not acknowledged yet still counts as waiting, for the moment that
takes. Figures are read from Kafka at most once per ``CACHE_S`` per queue, however many
requests ask (concurrent ones share one read); admission waits for a read once they are
older, ``GET /v1/queues`` answers the last ones at once (up to ``STALE_S`` past
``CACHE_S``) and reads new ones in the background.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from headwater.core.priority import DEFAULT as DEFAULT_PRIORITY
from headwater.topics import Topics
from services.common.clock import now_ms
from services.common.settings import CommonSettings
from services.common.topic_reader import TopicReader
from services.gateway.queues.workers import Heard, WorkerRegistry
from services.worker.announce import WorkerAnnounced

CACHE_S = 1.0
"""How long figures read from Kafka are reused, seconds."""
STALE_S = 30.0
"""How long past ``CACHE_S`` ``GET /v1/queues`` still answers figures it has at once,
reading new ones in the background, seconds (older: it waits for a read)."""
OLDEST_READ_S = 5.0
"""How long reading the records at the committed offsets may take, seconds."""

T = TypeVar("T")


class QueueState(StrEnum):
    """What a queue can do now."""

    OK = "ok"  # live workers, room below maxdepth
    NO_LIVE_WORKERS = "no_live_workers"  # nothing will take its dispatches
    FULL = "full"  # backlog at or over maxdepth: submissions needing it get 429


@dataclass(frozen=True)
class Lag:
    """A queue's backlog (dispatches not taken yet) and its oldest waiting dispatch's
    Kafka timestamp (ms since the epoch; None without backlog); ``topics``: each of its
    topics' backlog, ``(topic, backlog)`` (empty for the lag of one topic)."""

    backlog: int
    oldest_ms: int | None = None
    topics: tuple[tuple[str, int], ...] = ()


class TimedCache:
    """Values computed at most once per ``ttl_s`` per key; callers asking while one is
    computed wait for it. A failure is not kept.

    A caller that takes a stale value (``stale_ok``) gets the last one at once, if it is
    at most ``stale_s`` past its ``ttl_s``, while a new one is computed in the
    background (RFC 5861's stale-while-revalidate): a ``GET /v1/queues`` asked again
    answers from memory, its figures at most ``ttl_s`` plus one read old.
    """

    def __init__(self, ttl_s: float, stale_s: float = 0.0) -> None:
        self.ttl_s, self.stale_s = ttl_s, stale_s
        self._entries: dict[Any, tuple[float, asyncio.Future[Any]]] = {}
        self._refreshing: dict[Any, asyncio.Future[Any]] = {}

    async def get(self, key: Any, compute: Callable[[], Awaitable[T]],
                  stale_ok: bool = False) -> T:
        """The value of ``key``, computed with ``compute`` when missing or stale (with
        ``stale_ok``, a stale value is answered and a new one computed meanwhile).

        Raises:
            Exception: whatever ``compute`` raised (for the caller that waits for it).
        """
        entry = self._entries.get(key)
        now = time.monotonic()
        if entry is not None and entry[1].done() and now > entry[0]:
            if stale_ok and _succeeded(entry[1]) and now <= entry[0] + self.stale_s:
                if key not in self._refreshing:
                    self._refresh(key, compute)
                value: T = entry[1].result()
                return value
            entry = None
        if entry is None:
            entry = self._start(key, compute)
        result: T = await asyncio.shield(entry[1])
        return result

    def _start(self, key: Any, compute: Callable[[], Awaitable[Any]],
               ) -> tuple[float, asyncio.Future[Any]]:
        future: asyncio.Future[Any] = asyncio.ensure_future(compute())
        entry = self._entries[key] = (time.monotonic() + self.ttl_s, future)
        future.add_done_callback(lambda f: self._forget_failure(key, f))
        return entry

    def _refresh(self, key: Any, compute: Callable[[], Awaitable[Any]]) -> None:
        """Compute ``key`` again in the background; its entry is replaced once it
        succeeds (a failure keeps the stale one, and the next caller tries again)."""
        future: asyncio.Future[Any] = asyncio.ensure_future(compute())
        self._refreshing[key] = future

        def done(f: asyncio.Future[Any]) -> None:
            self._refreshing.pop(key, None)
            if _succeeded(f):
                self._entries[key] = (time.monotonic() + self.ttl_s, f)

        future.add_done_callback(done)

    def _forget_failure(self, key: Any, future: asyncio.Future[Any]) -> None:
        if not _succeeded(future) and self._entries.get(key, (0, None))[1] is future:
            del self._entries[key]


def _succeeded(future: asyncio.Future[Any]) -> bool:
    """Whether ``future`` is done with a value (its exception, if any, is retrieved)."""
    return future.done() and not future.cancelled() and future.exception() is None


class QueueFigures:
    """Reads backlogs and the oldest waiting dispatches from Kafka (``TopicReader``).

    Offsets and metadata are asked of one long-lived reader (``offsets``) that never
    fetches records, the oldest dispatches fetched by another (``reader``), unassigned
    after each read: a consumer assigned to partitions keeps long-polling them
    (``fetch.max.wait.ms``, 500 ms), and Kafka answers one connection's requests in
    order, so each offset request behind such a poll waited for it (1 to 2.5 s a
    ``GET /v1/queues``).

    Args:
        settings: Kafka settings and the topic names.
    """

    def __init__(self, settings: CommonSettings) -> None:
        self.settings = settings
        self.reader = TopicReader(settings.bootstrap, max_message_bytes=settings.max_message_bytes,
                                  timeout_s=OLDEST_READ_S)
        self.offsets = TopicReader(settings.bootstrap, timeout_s=OLDEST_READ_S)
        self.cache = TimedCache(CACHE_S, STALE_S)
        self._fetching = asyncio.Lock()  # one fetch at a time: it assigns the partitions

    async def start(self) -> None:
        """Connect (both readers, or neither).

        Raises:
            KafkaError: the broker is unreachable.
        """
        await self.reader.start()
        try:
            await self.offsets.start()
        except BaseException:
            await self.reader.stop()
            raise

    async def stop(self) -> None:
        """Disconnect."""
        try:
            await self.offsets.stop()
        finally:
            await self.reader.stop()

    async def lag(self, queue: str, stale_ok: bool = False) -> Lag:
        """``queue``'s backlog and oldest waiting dispatch (``stale_ok``: as
        ``TimedCache.get``). Admission and ``GET /v1/queues`` share one figure per
        queue, so a submission is admitted by the backlog the queues show.

        Raises:
            KafkaError: the broker could not answer.
            TimeoutError: it did not answer in time.
        """
        return await self.cache.get(("lag", queue), lambda: self._lag(queue), stale_ok)

    async def task_queues(self, stale_ok: bool = False) -> set[str]:
        """The queues whose tasks topic or a lane exists (``stale_ok``: as
        ``TimedCache.get``).

        Raises:
            KafkaError: the broker could not answer.
        """
        return set(await self.task_topics(stale_ok))

    async def task_topics(self, stale_ok: bool = False) -> dict[str, list[str]]:
        """Queue -> its dispatch topics that exist: ``tasks.<queue>`` and its lanes,
        sorted (``stale_ok``: as ``TimedCache.get``).

        Raises:
            KafkaError: the broker could not answer.
        """
        return await self.cache.get("topics", self._task_topics, stale_ok)

    async def _task_topics(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for topic in sorted(await self.offsets.admin.list_topics()):
            queue = self.settings.topics.queue_of(topic)
            if queue is not None:
                found.setdefault(queue, []).append(topic)
        return found

    async def _lag(self, queue: str) -> Lag:
        topics = (await self.task_topics(stale_ok=True)).get(queue) or [
            self.settings.topics.tasks(queue)]
        lags = [await self._topic_lag(queue, topic) for topic in topics]
        stamps = [lag.oldest_ms for lag in lags if lag.oldest_ms is not None]
        return Lag(sum(lag.backlog for lag in lags), min(stamps) if stamps else None,
                   tuple((topic, lag.backlog) for topic, lag in zip(topics, lags, strict=True)))

    async def _topic_lag(self, queue: str, topic: str) -> Lag:
        """The backlog and oldest waiting dispatch of one of ``queue``'s topics."""
        partitions = await self.offsets.partitions(topic)
        if not partitions:
            return Lag(0)
        end = await self.offsets.end_offsets(topic, partitions)
        committed = await self.offsets.committed(self.settings.topics.worker_group(queue),
                                                 topic, partitions)
        missing = [p for p in partitions if p not in committed]
        start = {**await self.offsets.beginning_offsets(topic, missing), **committed}
        waiting = {p: start[p] for p in partitions if end[p] > start[p]}
        backlog = sum(end[p] - start[p] for p in waiting)
        if not waiting:
            return Lag(backlog)
        stamps = []
        async with self._fetching:
            try:
                async for batch in self.reader.batches(topic, waiting, {p: o + 1 for p, o in
                                                                         waiting.items()}):
                    stamps += [r.timestamp for r in batch]
            finally:
                self.reader.consumer.unsubscribe()  # no polling in the background meanwhile
        return Lag(backlog, min(stamps) if stamps else None)


def maxdepth_of(maxdepth: Mapping[str, int], queue: str) -> int:
    """``queue``'s maxdepth (``*`` for the queues not named; 0: unlimited)."""
    return maxdepth.get(queue, maxdepth.get("*", 0))


def queue_state(live_workers: int, backlog: int, maxdepth: int) -> QueueState:
    """A queue's state: no live workers first, then full (``maxdepth`` > 0 reached)."""
    if live_workers == 0:
        return QueueState.NO_LIVE_WORKERS
    if maxdepth > 0 and backlog >= maxdepth:
        return QueueState.FULL
    return QueueState.OK


def worker_view(record: WorkerAnnounced, now: int) -> dict[str, Any]:
    """One live worker as ``GET /v1/queues`` shows it."""
    return {"worker_id": record.worker_id, "host": record.host, "pid": record.pid,
            "version": record.version, "tasks": list(record.tasks), "tags": list(record.tags),
            "concurrency": record.concurrency, "in_flight": record.in_flight,
            "started_at_ms": record.started_at_ms,
            "announced_s_ago": round(max(0, now - record.at_ms) / 1000, 1)}


def selector_views(topics: Topics, lag: Lag) -> list[dict[str, Any]]:
    """A queue's selector topics (``Topics.needs``) as ``GET /v1/queues`` shows them:
    ``{"requires": [tags] or None (named by a digest), "topic", "backlog"}``, by topic."""
    out = []
    for topic, backlog in lag.topics:
        parsed = topics.parse_needs(topic)
        if parsed is not None:
            tags = parsed[1]
            out.append({"requires": None if tags is None else list(tags), "topic": topic,
                        "backlog": backlog})
    return out


def priority_views(topics: Topics, lag: Lag) -> dict[str, int]:
    """A queue's backlog per priority (``Topics.priority``) as ``GET /v1/queues`` shows
    it: ``{"8": 3, "5": 40}``, highest first; the default band's is that of its other
    topics (``tasks.<queue>``, lanes and selector topics); bands without backlog left
    out."""
    out: dict[int, int] = {}
    for topic, backlog in lag.topics or (("", lag.backlog),):
        parsed = topics.parse_priority(topic)
        band = DEFAULT_PRIORITY if parsed is None else parsed[1]
        out[band] = out.get(band, 0) + backlog
    return {str(band): n for band, n in sorted(out.items(), reverse=True) if n}


def lost_view(heard: Heard) -> dict[str, Any]:
    """A lost worker (``WorkerRegistry.lost_workers``) as ``GET /v1/queues`` shows it."""
    record = heard.record
    return {"worker_id": record.worker_id, "host": record.host, "pid": record.pid,
            "in_flight": record.in_flight, "last_heard_at": datetime.fromtimestamp(
                heard.heard_at_ms / 1000, UTC).isoformat()}


async def overview(figures: QueueFigures, registry: WorkerRegistry,
                   maxdepth: Mapping[str, int]) -> list[dict[str, Any]]:
    """Every known queue (a worker announced it, or its tasks topic exists), sorted by
    name, with its figures.

    Raises:
        KafkaError: the broker could not answer.
        TimeoutError: it did not answer in time.
    """
    now = now_ms()
    live, lost = registry.live(now), registry.lost_workers(now)
    names = sorted(registry.queues() | await figures.task_queues(stale_ok=True))
    lags = await asyncio.gather(*(figures.lag(q, stale_ok=True) for q in names))
    out = []
    for queue, lag in zip(names, lags, strict=True):
        workers = [w for w in live if w.queue == queue]
        depth = maxdepth_of(maxdepth, queue)
        out.append({
            "queue": queue, "backlog": lag.backlog,
            "in_flight": sum(w.in_flight for w in workers), "live_workers": len(workers),
            "workers": [worker_view(w, now) for w in workers],
            "lost_workers": [lost_view(h) for h in lost if h.record.queue == queue],
            "tasks": sorted({t for w in workers for t in w.tasks}),
            "tags": sorted({t for w in workers for t in w.tags}),
            "selectors": selector_views(figures.settings.topics, lag),
            "backlog_by_priority": priority_views(figures.settings.topics, lag),
            "oldest_waiting_s": None if lag.oldest_ms is None
            else round(max(0, now - lag.oldest_ms) / 1000, 1),
            "maxdepth": depth, "state": queue_state(len(workers), lag.backlog, depth).value,
        })
    return out
