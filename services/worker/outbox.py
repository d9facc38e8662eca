"""Where a worker's records go out: reports (prepared so that they can be sent), task log
lines and dead letters, retried while Kafka is unavailable, replaced or dropped when they
never can be.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from aiokafka.errors import (
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    OutOfOrderSequenceNumber,
    ProducerFenced,
    UnknownProducerId,
)

from headwater import codec
from headwater.core import events as ev
from headwater.log_lines import TaskLogLines
from services.common import tracing
from services.common.kafka.client import AVRO_HEADERS
from services.worker import reports

log = logging.getLogger("headwater.worker")

Headers = Sequence[tuple[str, bytes]]
SERVICE_NAME = "headwater-worker"
"""``service.name`` of the worker's trace spans (``services.common.tracing``): a report
carries the trace context current where it is sent, its attempt's (``attempt``)."""

BROKEN_PRODUCER = (OutOfOrderSequenceNumber, UnknownProducerId, InvalidProducerEpoch,
                   InvalidProducerIdMapping, ProducerFenced)
"""Errors after which an idempotent producer refuses every further record of the
partition (e.g. once the broker rejected a batch as too large, its sequence numbers have
a gap): only a new producer, with a new producer id, can send there again."""


class Producer(Protocol):
    """The part of ``AIOKafkaProducer`` the outbox uses."""

    async def send_and_wait(self, topic: str, value: bytes | None = None,
                            key: bytes | None = None, partition: int | None = None,
                            timestamp_ms: int | None = None,
                            headers: Headers | None = None) -> Any:
        """Produce one record and wait for its acknowledgement."""

    async def stop(self) -> None:
        """Flush and close."""


def transient(error: BaseException) -> bool:
    """Whether producing may succeed if tried again (the broker is slow or unreachable)."""
    if isinstance(error, KafkaTimeoutError | KafkaConnectionError):
        return True
    return isinstance(error, KafkaError) and bool(error.retriable)


class Outbox:
    """Produces a worker's records and never lets one record block its partition.

    Args:
        connect: makes a started producer (called again to replace a broken one).
        reports_topic: where reports go.
        max_output_bytes: largest encoded ``TaskSucceeded``, bytes.
        backoff_s: first wait before producing again after a transient error, seconds
            (doubles up to ``max_backoff_s``).
        max_backoff_s: longest such wait, seconds.
    """

    def __init__(self, connect: Callable[[], Awaitable[Producer]], reports_topic: str,
                 max_output_bytes: int, backoff_s: float = 0.5,
                 max_backoff_s: float = 10.0) -> None:
        self.connect = connect
        self.reports_topic = reports_topic
        self.max_output_bytes = max_output_bytes
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.producer: Producer | None = None
        self._replacing = asyncio.Lock()
        tracing.configure(SERVICE_NAME)

    async def start(self) -> None:
        """Connect the producer."""
        self.producer = await self.connect()

    async def stop(self) -> None:
        """Flush and close the producer."""
        if self.producer is not None:
            await self.producer.stop()

    async def report(self, report: ev.Report) -> bool:
        """Send ``report``, or what stands in for it, and wait for the acknowledgement.

        A report that cannot be encoded as it is (a lone surrogate, a non-JSON or too
        large output) is fixed or replaced first (:func:`reports.prepare`); one that
        Kafka refuses for good is replaced by a ``TaskFailed`` saying why, or dropped if
        it is not an outcome (``TaskStarted``, ``TaskProgressed``, ``TaskHeartbeated``,
        ``TaskCheckpointed``, ``TaskOutputStreamed``).

        Returns:
            True once the report or its stand-in is acknowledged; False if it was dropped.

        Raises:
            Exception: even the stand-in could not be sent, for good (e.g. the producer
                is closed).
        """
        try:
            await self._send(report)
        except Exception as e:
            replacement = reports.stand_in(report, e)
            if replacement is None:
                log.warning("dropped a %s report of %s/%s: %s: %s", type(report).__name__,
                            report.workflow_id, report.node, type(e).__name__, e)
                return False
            log.warning("%s/%s attempt %d: %s", report.workflow_id, report.node,
                        report.attempt, replacement.error, exc_info=e)
            await self._send(replacement)
        return True

    async def log_lines(self, topic: str, lines: TaskLogLines) -> bool:
        """Produce a batch of an attempt's log lines to ``topic``, keyed by workflow id.

        Returns:
            Whether it was sent; False (logged) when Kafka refuses it for good.
        """
        try:
            await self._produce(topic, codec.encode(lines), lines.workflow_id.encode(),
                                AVRO_HEADERS)
        except Exception as e:
            log.warning("dropped %d log lines of %s/%s attempt %d: %s: %s", len(lines.lines),
                        lines.workflow_id, lines.node, lines.attempt, type(e).__name__, e)
            return False
        return True

    async def dead_letter(self, topic: str, value: bytes | None, key: bytes | None,
                          headers: Headers) -> bool:
        """Produce an undecodable record to the dead-letter ``topic``.

        Returns:
            Whether it was sent; False (logged) when Kafka refuses it for good.
        """
        try:
            await self._produce(topic, value, key, headers)
        except Exception:
            log.exception("could not dead-letter a record (key %r); it is skipped", key)
            return False
        return True

    async def _send(self, report: ev.Report) -> None:
        prepared, data = reports.prepare(report, self.max_output_bytes)
        if isinstance(prepared, ev.TaskFailed) and not isinstance(report, ev.TaskFailed):
            log.warning("%s/%s attempt %d failed for good: %s", report.workflow_id,
                        report.node, report.attempt, prepared.error)
        await self._produce(self.reports_topic, data, prepared.workflow_id.encode(),
                            tracing.with_context(AVRO_HEADERS))

    async def _produce(self, topic: str, value: bytes | None, key: bytes | None,
                       headers: Headers) -> None:
        """Produce one record, retrying transient errors with backoff until it is sent,
        and replacing the producer when its state is broken (``BROKEN_PRODUCER``).

        Raises:
            Exception: a permanent error (e.g. ``MessageSizeTooLargeError``).
        """
        delay = self.backoff_s
        while True:
            producer = self.producer
            assert producer is not None, "Outbox.start() was not called"
            try:
                await producer.send_and_wait(topic, value, key=key, headers=list(headers))
                return
            except Exception as e:
                if producer is not self.producer:
                    continue  # replaced meanwhile (its last records failed): try the new one
                if isinstance(e, BROKEN_PRODUCER):
                    await self._replace(producer, e)
                    continue
                if not transient(e):
                    raise
                log.warning("producing to %s failed (%s: %s); trying again in %.1f s",
                            topic, type(e).__name__, e, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_backoff_s)

    async def _replace(self, broken: Producer, error: BaseException) -> None:
        """Replace ``broken`` by a new producer, unless another send already did."""
        async with self._replacing:
            if self.producer is not broken:
                return
            log.warning("the producer is unusable (%s: %s); replacing it",
                        type(error).__name__, error)
            delay = self.backoff_s
            while True:
                try:
                    self.producer = await self.connect()
                    break
                except Exception as e:
                    if not transient(e):
                        raise
                    log.warning("connecting a new producer failed (%s); trying again", e)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, self.max_backoff_s)
        try:
            await broken.stop()
        except Exception as e:  # its pending records fail; their senders retry
            log.debug("stopping the broken producer: %s", e)
