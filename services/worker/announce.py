"""Workers announce themselves on the compacted ``workers`` topic (``Topics.workers``).

A worker sends a ``WorkerAnnounced`` keyed by its id when it starts serving, every
``announce_s`` seconds while it serves, and when it stops: one with ``stopping`` true,
then a tombstone (a null value, so that compaction forgets it). A worker killed outright
sends neither; it stops counting as live once ``LIVE_INTERVALS`` intervals passed
without an announcement (``is_live``). The gateway's ``WorkerRegistry`` and
``headwater stuck`` read the topic; nothing reads it in a consumer group.

The record is Avro like every other (``schemas/avro/WorkerAnnounced.avsc``, written with
``headwater.codec``'s single-object encoding); it is not a workflow record, so it has
its own decoder here (``decode_announcement``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import io
import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import fastavro
import orjson
from aiokafka import AIOKafkaProducer
from fastavro.schema import parse_schema

from headwater import codec
from headwater.errors import DecodeError
from services.common.clock import now_ms
from services.common.kafka import AVRO_HEADERS, ensure_topics, make_producer
from services.common.settings import CommonSettings
from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")

LIVE_INTERVALS = 3
"""A worker is live while its last announcement is younger than this many of its
intervals (and it is not stopping)."""
WORKERS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.ms": "3600000"}
"""The workers topic keeps each worker's last record (Kafka's log compaction); hourly
segments, so that compaction (which skips the active segment) has something to do."""
SEND_TIMEOUT_S = 10.0
"""How long one announcement may wait for Kafka's acknowledgement, seconds."""
STOP_SEND_S = 3.0
"""How long the stopping announcement and the tombstone may wait each, seconds (a
worker that cannot say it stops is not live for long anyway)."""


@dataclass(frozen=True)
class WorkerAnnounced:
    """One worker's announcement (the fields of ``WorkerAnnounced.avsc``).

    Attributes:
        worker_id: its name in reports; the record's key.
        queue: the queue it serves.
        tasks: the task names it serves, sorted.
        concurrency: attempts it runs at once.
        in_flight: attempts running when it announced.
        version: the ``headwater`` package version it runs.
        host: host name.
        pid: process id.
        started_at_ms: when it started, ms since the epoch (its clock).
        at_ms: when it announced, ms since the epoch (its clock).
        interval_ms: how often it announces, ms.
        stopping: True once it stops taking dispatches.
    """

    worker_id: str
    queue: str
    tasks: tuple[str, ...]
    concurrency: int
    in_flight: int
    version: str
    host: str
    pid: int
    started_at_ms: int
    at_ms: int
    interval_ms: int
    stopping: bool = False


def is_live(record: WorkerAnnounced, heard_at_ms: int, now: int) -> bool:
    """Whether the worker counts as live.

    Args:
        record: its last announcement.
        heard_at_ms: when it was heard, ms since the epoch, on the reader's clock.
        now: the current time, ms since the epoch, on the same clock.
    """
    return not record.stopping and now - heard_at_ms < LIVE_INTERVALS * record.interval_ms


def encode_announcement(record: WorkerAnnounced) -> bytes:
    """The record as single-object Avro (``headwater.codec.encode``).

    Raises:
        ValueError: a field does not fit the schema.
    """
    return codec.encode(record)


@cache
def _schema() -> Any:
    return parse_schema(orjson.loads((codec.schema_dir() / "WorkerAnnounced.avsc").read_bytes()))


def decode_announcement(data: bytes | None) -> WorkerAnnounced | None:
    """Decode a record of the workers topic; None for a tombstone (a null value).

    Raises:
        DecodeError: not a ``WorkerAnnounced`` (another schema, no marker, a bad body).
    """
    if data is None:
        return None
    if data[:codec.HEADER_SIZE] != codec.fingerprint_header("WorkerAnnounced"):
        raise DecodeError("not a WorkerAnnounced record")
    buf = io.BytesIO(data)
    buf.seek(codec.HEADER_SIZE)
    try:
        value: dict[str, Any] = fastavro.schemaless_reader(  # type: ignore[assignment]
            buf, _schema(), None)
        if buf.tell() != len(data):
            raise DecodeError(f"{len(data) - buf.tell()} trailing bytes after WorkerAnnounced")
        return WorkerAnnounced(**{**value, "tasks": tuple(value["tasks"])})
    except DecodeError:
        raise
    except Exception as e:  # fastavro raises many types on bad input; all mean the same
        raise DecodeError(f"bad WorkerAnnounced body: {type(e).__name__}: {e}") from e


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
    """

    def __init__(self, settings: Settings, tasks: Iterable[str],
                 in_flight: Callable[[], int]) -> None:
        self.topic = settings.topics.workers
        self.settings = settings
        self.in_flight = in_flight
        self.interval_s = settings.announce_s
        self.base = WorkerAnnounced(
            settings.worker_id, settings.queue, tuple(sorted(tasks)), settings.concurrency, 0,
            package_version(), socket.gethostname(), os.getpid(), now_ms(), 0,
            max(1, round(settings.announce_s * 1000)))
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
            except Exception as e:  # the next one may pass; liveness spans 3 intervals
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
