"""One trigger's consumer: reads its topic in its own consumer group and turns each
record into a submission of its definition, or a dead letter.

Per batch of records (``getmany``): the definition is resolved once (as a submission's
is: ``definitions.registry``, the trigger's tenant's view, children inlined), each
record is mapped (``mapping.map_record``) and its input checked against the
definition's ``input_schema``; the submissions are produced to ``submissions`` keyed by
run id, in the source partitions' order, and the records that cannot be mapped to
``dlq`` with a ``reason`` naming the trigger, topic, partition, offset and fault. Only
once Kafka acknowledged every one of them are the batch's offsets committed: a process
that dies before that reads the batch again, and the same records give the same run ids
(``mapping``), which the coordinator answers as the runs it has. Any other failure
(Kafka or PostgreSQL unreachable) drops the consumer and starts it again from the
committed offsets after ``RETRY_S``; a record is never skipped by it.

A definition that cannot be resolved (deleted, unknown since) dead-letters the
batch's records naming it: the topic moves on, and a later ``PUT`` of the definition
serves the records that follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.errors import MessageSizeTooLargeError
from prometheus_client import Counter

from headwater import codec
from headwater.core import events as ev
from headwater.topics import (
    MAX_AT_MS,
    REASON_HEADER,
    SOURCE_TOPIC_HEADER,
    VALUE_OMITTED_HEADER,
    Topics,
)
from services.common import faults, tracing
from services.common.auth.tokens import OPEN, Principal
from services.common.clock import now_ms
from services.common.kafka.client import AVRO_HEADERS, started, topic_exists
from services.common.kafka.security import aiokafka_security
from services.common.settings import CommonSettings
from services.coordinator.submitters import without_authorization
from services.gateway.definitions.registry import Resolved, check_input, inline_children, resolve
from services.gateway.edge.body import require_storable
from services.gateway.edge.problems import Problem
from services.gateway.queues.admission import placed
from services.gateway.triggers.mapping import map_record
from services.gateway.triggers.settings import TriggerSettings
from services.gateway.triggers.templates import MappingError

log = logging.getLogger("headwater.gateway.triggers")

RETRY_S = 2.0
"""How long a consumer that failed waits before it starts again, seconds."""
POLL_MS = 500
"""The longest one fetch waits for records, ms."""
MAX_BATCH = 500
"""The most records one batch holds."""
TRIGGER_HEADER = "trigger"
"""On a trigger's dead letter: the trigger (``<tenant>/<name>``)."""
MAX_REASON_CHARS = 2000

RECORDS = Counter("headwater_trigger_records_total", "Records of triggers' topics read, by "
                  "trigger (<tenant>/<name>, - without a tenant) and outcome: submitted, "
                  "filtered (the filter passed it by) or dead_lettered.",
                  ["trigger", "outcome"])


@dataclass(frozen=True)
class Plumbing:
    """What every trigger's consumer shares with the gateway.

    Attributes:
        settings: Kafka's settings (bootstrap, security, record size) and topic names.
        producer: the gateway's producer.
        pool: the projection's pool (definitions).
        auth: the gateway's headers on its submissions (its token when auth is on).
        timeout_s: the longest wait for Kafka's acknowledgement of a batch, seconds.
        exists: whether the broker lists a topic (``kafka.client.topic_exists``).
    """

    settings: CommonSettings
    producer: AIOKafkaProducer
    pool: asyncpg.Pool
    auth: Sequence[tuple[str, bytes]] = ()
    timeout_s: float = 10.0
    exists: Callable[[CommonSettings, str], Awaitable[bool]] = topic_exists

    @property
    def topics(self) -> Topics:
        """The deployment's topic names."""
        return self.settings.topics


def viewer_of(settings: TriggerSettings) -> Principal:
    """Whose definitions the trigger's runs resolve: its tenant's (and the shared ones),
    or, without a tenant, every one."""
    if settings.tenant is None:
        return OPEN
    return Principal(settings.tenant, "submit", f"trigger:{settings.name}")


class TriggerRunner:
    """Runs one trigger's consumer until stopped (``start``, ``stop``).

    Args:
        settings: the trigger.
        key: its name on the triggers topic and in metrics (``trigger_key``).
        plumbing: the gateway's connections.
    """

    def __init__(self, settings: TriggerSettings, key: str, plumbing: Plumbing) -> None:
        self.settings = settings
        self.key = key
        self.plumbing = plumbing
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start consuming in the background."""
        self._task = asyncio.create_task(self._run(), name=f"trigger {self.key}")

    async def stop(self) -> None:
        """Stop consuming (a batch in hand is dropped uncommitted: read again later)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                async with started(self._consumer()) as consumer:
                    while True:
                        batches = await consumer.getmany(timeout_ms=POLL_MS,
                                                         max_records=MAX_BATCH)
                        if batches:
                            await self._apply(consumer, batches)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("trigger %s: its consumer failed (%r); starting it again from "
                            "its committed offsets in %.0f s", self.key, e, RETRY_S)
            await asyncio.sleep(RETRY_S)

    def _consumer(self) -> AIOKafkaConsumer:
        common = self.plumbing.settings
        return AIOKafkaConsumer(
            self.settings.topic, bootstrap_servers=common.bootstrap,
            **aiokafka_security(common.kafka_security),
            group_id=self.plumbing.topics.trigger_group(self.settings.tenant,
                                                        self.settings.name),
            enable_auto_commit=False, auto_offset_reset=self.settings.start,
            max_partition_fetch_bytes=common.max_message_bytes,
            isolation_level="read_committed")

    async def _apply(self, consumer: AIOKafkaConsumer,
                     batches: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        """Submit or dead-letter every record of a batch, then commit its offsets."""
        definition = await self._definition()
        acks: list[Awaitable[Any]] = []
        counts = {"submitted": 0, "filtered": 0, "dead_lettered": 0}
        for records in batches.values():
            for record in records:
                outcome, ack = await self._one(record, definition)
                counts[outcome] += 1
                if ack is not None:
                    acks.append(ack)
        await asyncio.wait_for(asyncio.gather(*acks), self.plumbing.timeout_s)
        faults.point("gateway.trigger_acked")
        await consumer.commit({tp: records[-1].offset + 1 for tp, records in batches.items()})
        for outcome, n in counts.items():
            if n:
                RECORDS.labels(self.key, outcome).inc(n)

    async def _definition(self) -> tuple[Resolved, dict[str, Any]] | str:
        """The definition's version and its spec with its children inlined and its
        nodes placed on the queues of the workers that serve their tasks (as a
        submission through the gateway is, ``queues.admission.placed``; refusing
        nothing), or why it cannot be had (a 4xx: dead-letter). PostgreSQL's failures
        raise."""
        me = viewer_of(self.settings)
        pool = self.plumbing.pool
        try:
            resolved = await resolve(pool, self.settings.definition, me)
            spec = placed(await inline_children(pool, resolved.spec, (resolved.name,), me=me))
        except Problem as e:
            if e.status >= 500:
                raise
            return f"definition {self.settings.definition}: {e.detail}"
        return resolved, spec

    async def _one(self, record: ConsumerRecord,
                   definition: tuple[Resolved, dict[str, Any]] | str,
                   ) -> tuple[str, Awaitable[Any] | None]:
        """Send one record's submission (or dead letter); its outcome and ack."""
        if isinstance(definition, str):
            return "dead_lettered", await self._dead_letter(record, definition)
        resolved, spec = definition
        try:
            mapped = map_record(self.settings, record)
        except MappingError as e:
            return "dead_lettered", await self._dead_letter(record, str(e))
        if mapped is None:
            return "filtered", None
        try:
            require_storable({"input": mapped.input})  # as HTTP's: U+0000, 64-bit integers
            check_input(resolved, mapped.input)
        except Problem as e:
            return "dead_lettered", await self._dead_letter(record, f"input: {e.detail}")
        at_ms = record.timestamp if 0 < record.timestamp <= MAX_AT_MS else now_ms()
        submission = ev.WorkflowSubmitted(mapped.run_id, spec, mapped.input, at_ms,
                                          self.settings.tenant, definition=resolved.name,
                                          definition_version=resolved.version)
        try:
            value = codec.encode(submission)
            topic, key = self.plumbing.topics.submissions, mapped.run_id.encode()
            with tracing.producing(topic, key):
                ack = await self.plumbing.producer.send(
                    topic, value, key=key,
                    headers=tracing.with_context([*AVRO_HEADERS, *self.plumbing.auth]))
        except (ValueError, TypeError, MessageSizeTooLargeError) as e:
            return "dead_lettered", await self._dead_letter(
                record, f"submission of run {mapped.run_id}: {e}")
        return "submitted", ack

    async def _dead_letter(self, record: ConsumerRecord, fault: str) -> Awaitable[Any]:
        """Send a record to ``dlq`` as it came, with headers naming where it came from,
        which trigger refused it and why; its value is left out (and its size said)
        when it would not fit with them."""
        reason = (f"trigger {self.key}: record {record.topic}[{record.partition}]@"
                  f"{record.offset}: {fault}")[:MAX_REASON_CHARS]
        headers = [*without_authorization(record.headers or ()), (REASON_HEADER, reason.encode()),
                   (TRIGGER_HEADER, self.key.encode()),
                   (SOURCE_TOPIC_HEADER, record.topic.encode()),
                   ("source-partition", str(record.partition).encode()),
                   ("source-offset", str(record.offset).encode())]
        log.warning("dead-lettered: %s", reason)
        producer, dlq = self.plumbing.producer, self.plumbing.topics.dlq
        try:
            ack: Awaitable[Any] = await producer.send(dlq, record.value, key=record.key,
                                                      headers=headers)
        except MessageSizeTooLargeError:
            omitted = (VALUE_OMITTED_HEADER, f"{len(record.value or b'')} bytes".encode())
            ack = await producer.send(dlq, None, key=record.key, headers=[*headers, omitted])
        return ack
