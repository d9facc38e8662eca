"""Workers announce themselves on the compacted ``workers`` topic (``Topics.workers``).

A worker sends a ``WorkerAnnounced`` keyed by its id when it starts serving, every
``announce_s`` seconds while it serves, and when it stops: one with ``stopping`` true,
then a tombstone (a null value, so that compaction forgets it). A worker killed outright
sends neither; it stops counting as live once ``LIVE_INTERVALS`` intervals passed
without an announcement (``is_live``). The gateway's ``WorkerRegistry`` and
``headwater stuck`` read the topic; nothing reads it in a consumer group.

The record (``headwater.announcement.WorkerAnnounced``, also importable from here) is Avro
like every other, encoded and decoded by ``headwater.codec``
(``schemas/avro/WorkerAnnounced.avsc``); ``decode_announcement`` refuses what does not
belong on the topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
import math
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from aiokafka import AIOKafkaProducer

from headwater import codec
from headwater.announcement import AnnouncedWorkflow
from headwater.announcement import WorkerAnnounced as WorkerAnnounced
from headwater.errors import DecodeError
from services.common.clock import now_ms
from services.common.kafka.client import AVRO_HEADERS, ensure_topics, make_producer
from services.common.settings import CommonSettings
from services.worker.settings import ANNOUNCE_RANGE_S, Settings

log = logging.getLogger("headwater.worker")

LIVE_INTERVALS = 3
"""A worker is live while its last announcement is younger than this many of its
intervals (and it is not stopping)."""
MAX_LIVE_INTERVAL_MS = int(ANNOUNCE_RANGE_S[1] * 1000)
"""The longest interval liveness counts by, ms (the longest ``HEADWATER_ANNOUNCE_S``):
a record that says it announces once a month (forged: announcements are trusted input)
keeps its worker live for ``LIVE_INTERVALS`` minutes at most."""
WORKERS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.ms": "3600000"}
"""The workers topic keeps each worker's last record (Kafka's log compaction); hourly
segments, so that compaction (which skips the active segment) has something to do."""
SEND_TIMEOUT_S = 10.0
"""How long one announcement may wait for Kafka's acknowledgement, seconds."""
STOP_SEND_S = 3.0
"""How long the stopping announcement and the tombstone may wait each, seconds (a
worker that cannot say it stops is not live for long anyway)."""


def is_heard(record: WorkerAnnounced, heard_at_ms: int, now: int) -> bool:
    """Whether the worker still announces itself, stopping or not: heard less than
    ``LIVE_INTERVALS`` of its intervals ago (at most ``MAX_LIVE_INTERVAL_MS`` each). A
    worker that is not is gone without a word (SIGKILLed, frozen, cut off): the
    attempts it ran are lost.

    Args:
        record: its last announcement.
        heard_at_ms: when it was heard, ms since the epoch, on the reader's clock.
        now: the current time, ms since the epoch, on the same clock.
    """
    interval_ms = min(record.interval_ms, MAX_LIVE_INTERVAL_MS)
    return now - heard_at_ms < LIVE_INTERVALS * interval_ms


def is_live(record: WorkerAnnounced, heard_at_ms: int, now: int) -> bool:
    """Whether the worker counts as live: not stopping, and ``is_heard``.

    Args:
        record: its last announcement.
        heard_at_ms: when it was heard, ms since the epoch, on the reader's clock.
        now: the current time, ms since the epoch, on the same clock.
    """
    return not record.stopping and is_heard(record, heard_at_ms, now)


def encode_announcement(record: WorkerAnnounced) -> bytes:
    """The record as single-object Avro (``headwater.codec.encode``).

    Raises:
        ValueError: a field does not fit the schema.
    """
    return codec.encode(record)


def decode_announcement(data: bytes | None) -> WorkerAnnounced | None:
    """Decode a record of the workers topic (``headwater.codec.decode``); None for a
    tombstone (a null value).

    Raises:
        DecodeError: no marker, an unknown fingerprint, a record of another type (named
            in the message), or a bad body (truncated, trailing bytes).
    """
    if data is None:
        return None
    name = codec.record_type(data)
    if name != WorkerAnnounced.__name__:
        raise DecodeError(f"a {name} record, not a WorkerAnnounced")
    record: WorkerAnnounced = codec.decode(data)
    return record


def latest(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, WorkerAnnounced]:
    """Each worker's last announcement from ``(key, value)`` pairs in log order, as
    compaction would keep them: a tombstone forgets the worker; undecodable records are
    skipped (logged)."""
    found: dict[str, WorkerAnnounced] = {}
    for key, value in records:
        try:
            record = decode_announcement(value)
        except DecodeError as e:
            log.warning("skipping a record of the workers topic: %s", e)
            continue
        if record is None:
            found.pop((key or b"").decode(errors="replace"), None)
        else:
            found[record.worker_id] = record
    return found


def package_version() -> str:
    """The installed ``headwater`` package's version (``importlib.metadata``)."""
    try:
        return importlib.metadata.version("headwater")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


async def ensure_workers_topic(settings: CommonSettings, timeout_s: float = 60.0) -> None:
    """Create the compacted workers topic (1 partition: a few records per worker) if it
    does not exist.

    Raises:
        KafkaConnectionError: the broker stayed unreachable for ``timeout_s``.
        TimeoutError: not listed within ``timeout_s``.
    """
    await ensure_topics(replace(settings, partitions=1), [settings.topics.workers],
                        timeout_s=timeout_s, configs=WORKERS_TOPIC_CONFIGS)


class Announcer:
    """Sends one worker's announcements; use ``async with`` around the time it serves.

    Args:
        settings: the worker's settings: its id, queue, concurrency, ``announce_s``
            (seconds), Kafka settings and the topic names.
        tasks: the task names it serves.
        in_flight: how many attempts run now (called at each announcement).
        workflows: the ``@workflow``s it serves (``services.worker.workflows``).

    Raises:
        ValueError: ``announce_s`` is not a positive, finite number (0 would announce
            without pause; ``HEADWATER_ANNOUNCE_S`` is checked by ``Settings.from_env``).
    """

    def __init__(self, settings: Settings, tasks: Iterable[str],
                 in_flight: Callable[[], int],
                 workflows: Iterable[AnnouncedWorkflow] = ()) -> None:
        if not math.isfinite(settings.announce_s) or settings.announce_s <= 0:
            raise ValueError(f"announce_s must be a positive number of seconds, got "
                             f"{settings.announce_s!r}")
        self.topic = settings.topics.workers
        self.settings = settings
        self.in_flight = in_flight
        self.interval_s = settings.announce_s
        self.base = WorkerAnnounced(
            settings.worker_id, settings.queue, tuple(sorted(tasks)), settings.concurrency, 0,
            package_version(), socket.gethostname(), os.getpid(), now_ms(), 0,
            max(1, round(settings.announce_s * 1000)), workflows=tuple(workflows),
            tags=settings.tags)
        self.producer: AIOKafkaProducer = make_producer(settings)
        self.is_stopping = False
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Announcer:
        """Connect and send the first announcement (the topic exists:
        ``ensure_workers_topic``)."""
        await self.producer.start()
        try:
            await self.announce()
        except BaseException:
            await self.producer.stop()
            raise
        self._loop = asyncio.create_task(self._every_interval())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        try:
            await self.stopping()
        finally:
            await self.producer.stop()

    def mark_stopping(self) -> None:
        """The worker stops taking dispatches (its drain begins): announce it at once,
        and in every later announcement."""
        self.is_stopping = True
        self._wake.set()

    async def announce(self, timeout_s: float = SEND_TIMEOUT_S) -> None:
        """Send one announcement now and wait for its acknowledgement.

        Args:
            timeout_s: how long to wait, seconds.

        Raises:
            KafkaError: the broker refused it or is unreachable.
            TimeoutError: not acknowledged within ``timeout_s``.
        """
        record = replace(self.base, in_flight=self.in_flight(), at_ms=now_ms(),
                         stopping=self.is_stopping)
        await asyncio.wait_for(self.producer.send_and_wait(
            self.topic, encode_announcement(record), key=record.worker_id.encode(),
            headers=AVRO_HEADERS), timeout_s)

    async def stopping(self) -> None:
        """Say that the worker stops (``stopping``), then send its tombstone; best
        effort (logged): a worker that cannot say it stops is not live for long."""
        self.is_stopping = True
        try:
            await self.announce(STOP_SEND_S)
            await asyncio.wait_for(self.producer.send_and_wait(
                self.topic, None, key=self.base.worker_id.encode()), STOP_SEND_S)
        except Exception as e:
            log.warning("could not announce that worker %s stops: %r", self.base.worker_id, e)

    async def _every_interval(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval_s)
            self._wake.clear()
            try:
                await self.announce()
            except Exception as e:  # the next one may pass; liveness spans LIVE_INTERVALS
                log.warning("worker %s could not announce itself: %r", self.base.worker_id, e)


def serving_at(found: Mapping[str, WorkerAnnounced], now: int) -> dict[str, set[str]]:
    """Queue -> the tasks its live workers serve, judging each worker by its own last
    ``at_ms`` (never later than ``now``): for a reader that read the topic just now.

    Args:
        found: each worker's last announcement (``latest``).
        now: the current time, ms since the epoch.
    """
    serving: dict[str, set[str]] = {}
    for record in found.values():
        if is_live(record, min(now, record.at_ms), now):
            serving.setdefault(record.queue, set()).update(record.tasks)
    return serving
