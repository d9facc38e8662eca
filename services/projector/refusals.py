"""Refused signals into the projection: the coordinator dead-letters a signal it cannot
apply (its run ended, a field its waits refuse) to ``dlq``, with the ``reason`` header,
and records nothing in the history; this reader takes those dead letters whose
``source-topic`` is ``control`` and whose value is a ``SignalSent``, and keeps each
refusal in ``signal_receipts`` (``refused_reason``, ``refused_at``), so that
``GET /v1/workflows/{id}/signals/{signal_id}`` can say ``refused`` and why.

It runs beside the projector (``writer.run_projector``) in a consumer group of its own
(``Topics.refusals_group``), committing after each batch is written; writing a refusal
again changes nothing. Any other dead letter is skipped unread: only its headers are
looked at. A dead letter whose value was left out (``value-omitted``: too large) names
no signal and is skipped too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER, Topics
from services.common.kafka.client import ensure_topics, started
from services.common.kafka.security import aiokafka_security
from services.common.settings import CommonSettings

log = logging.getLogger(__name__)

MAX_REASON_CHARS = 2000
"""The most of a reason kept, characters."""
UPSERT_REFUSAL = (
    "insert into signal_receipts (workflow_id, signal_id, name, idx, refused_reason,"
    " refused_at) values ($1, $2, $3, $4, $5, $6) on conflict (workflow_id, signal_id)"
    " do update set refused_reason = excluded.refused_reason,"
    " refused_at = excluded.refused_at")
RETRY_S = 1.0
"""How long the reader waits after PostgreSQL failed a batch before it tries again."""


def refusal_row(topics: Topics, record: Any) -> tuple[Any, ...] | None:
    """The ``UPSERT_REFUSAL`` arguments of one ``dlq`` record, or None when it is no
    refused signal (another source topic, another record type, no value, no
    ``signal_id``, undecodable).

    Args:
        topics: the deployment's topic names.
        record: an aiokafka ``ConsumerRecord`` of ``dlq``.
    """
    headers = {k: v for k, v in record.headers or ()}
    if headers.get(SOURCE_TOPIC_HEADER) != topics.control.encode() or record.value is None:
        return None
    try:
        signal = codec.decode(record.value)
    except DecodeError:
        return None
    if not isinstance(signal, ev.SignalSent) or not signal.signal_id:
        return None
    reason = headers.get(REASON_HEADER, b"").decode(errors="replace")[:MAX_REASON_CHARS]
    at = datetime.fromtimestamp(record.timestamp / 1000, UTC)
    return (signal.workflow_id, signal.signal_id, signal.name, signal.index,
            reason or "refused", at)


def refusal_rows(topics: Topics, records: Iterable[Any]) -> list[tuple[Any, ...]]:
    """``refusal_row`` of each record that is a refused signal, in order."""
    return [row for row in (refusal_row(topics, r) for r in records) if row is not None]


async def follow_refusals(settings: CommonSettings, pool: asyncpg.Pool) -> None:
    """Keep ``signal_receipts`` current with the refused signals of ``dlq`` until
    cancelled; a batch is committed once written (retried until PostgreSQL takes it).
    The topic is created first if the coordinator has not yet (a consumer subscribed to
    a missing topic would see it only at its next metadata refresh, minutes later)."""
    await ensure_topics(settings, [settings.topics.dlq], timeout_s=60.0)
    consumer = AIOKafkaConsumer(
        settings.topics.dlq, bootstrap_servers=settings.bootstrap,
        **aiokafka_security(settings.kafka_security), group_id=settings.topics.refusals_group,
        enable_auto_commit=False, auto_offset_reset="earliest",
        max_partition_fetch_bytes=settings.max_message_bytes,
        fetch_max_bytes=settings.max_message_bytes * 4)
    async with started(consumer):
        while True:
            batches = await consumer.getmany(timeout_ms=500, max_records=1000)
            rows = refusal_rows(settings.topics, [r for b in batches.values() for r in b])
            while rows:
                try:
                    await pool.executemany(UPSERT_REFUSAL, rows)
                    break
                except (OSError, asyncpg.PostgresError) as e:
                    log.warning("refused signals not written (%r); again in %.0f s", e,
                                RETRY_S)
                    await asyncio.sleep(RETRY_S)
            if batches:
                await consumer.commit()
