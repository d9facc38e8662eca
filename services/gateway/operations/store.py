"""Where bulk operations are kept: their records on the compacted ``operations`` topic
(the truth), projected into the ``operations`` table (what ``GET /v1/operations/{id}``
reads, and which gateway works on which operation).

Every write goes to Kafka first, then to the table; a gateway reads the whole topic
into the table when it starts (``rebuild``), so a lost database is rebuilt from Kafka.
A record replaces its row only when it is further along (``next``, then ``at_ms``), so
records applied in any order, or twice, leave the latest. The row also says which
gateway works on the operation (``owner``) and when it last wrote (``heartbeat_at``): a
running operation whose owner has not written for ``LEASE_S`` is taken over
(``claim_stale``).
"""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import UTC, datetime
from typing import Any

import asyncpg
from aiokafka import AIOKafkaProducer

from headwater import codec
from headwater.errors import DecodeError
from headwater.operations import OperationRecorded
from services.common.kafka.client import AVRO_HEADERS, ensure_compacted_topics
from services.common.settings import CommonSettings
from services.common.topic_reader import TopicReader
from services.gateway.edge.problems import RETRY_AFTER_S, Problem

log = logging.getLogger("headwater.gateway")

LEASE_S = 30.0
"""Seconds without a write after which a running operation's owner is taken for gone
and another gateway goes on with it, unless told (``HEADWATER_OPERATIONS_LEASE_S``)."""
SCHEMA = """
create table if not exists operations (
    operation_id text primary key,
    tenant text,
    action text not null,
    state text not null,
    position integer not null,
    doc jsonb not null,
    created_at timestamptz not null,
    updated_at timestamptz not null,
    owner text,
    heartbeat_at timestamptz
);
create index if not exists operations_running on operations (heartbeat_at)
    where state = 'running';
"""
"""The ``operations`` table: one row per operation, its record's document (``doc``),
``position`` its ``next``; ``owner`` and ``heartbeat_at`` as the module says."""
UPSERT = (
    "insert into operations (operation_id, tenant, action, state, position, doc,"
    " created_at, updated_at, owner, heartbeat_at)"
    " values ($1, $2, $3, $4, $5, $6, $7, $8, $9, case when $9::text is null then null"
    " else now() end)"
    " on conflict (operation_id) do update set state = excluded.state,"
    " position = excluded.position, doc = excluded.doc, updated_at = excluded.updated_at,"
    " owner = coalesce(excluded.owner, operations.owner),"
    " heartbeat_at = coalesce(excluded.heartbeat_at, operations.heartbeat_at)"
    " where (operations.position, operations.updated_at)"
    " <= (excluded.position, excluded.updated_at)")


def _at(at_ms: int) -> datetime:
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC)


async def apply(conn: asyncpg.Connection | asyncpg.Pool, record: OperationRecorded,
                owner: str | None = None) -> None:
    """Write one record into the table (idempotent, in any order); ``owner``: the
    gateway that wrote it, which holds the operation's lease from now."""
    doc = record.operation
    await conn.execute(UPSERT, record.operation_id, record.tenant, doc["action"],
                       record.state, int(doc["next"]), doc, _at(int(doc["created_ms"])),
                       _at(record.at_ms), owner)


async def write(producer: AIOKafkaProducer, pool: asyncpg.Pool, settings: CommonSettings,
                record: OperationRecorded, owner: str, timeout_s: float) -> None:
    """Produce ``record`` to the operations topic, wait for Kafka, then project it.

    Raises:
        Problem: 503 when Kafka does not acknowledge within ``timeout_s`` or fails.
        asyncpg.PostgresError, OSError: PostgreSQL could not be written.
    """
    try:
        await asyncio.wait_for(producer.send_and_wait(
            settings.topics.operations, codec.encode(record),
            key=record.operation_id.encode(), headers=AVRO_HEADERS), timeout_s)
    except asyncio.CancelledError:
        raise
    except Exception as e:  # aiokafka's errors, and the timeout: Kafka is not there
        raise Problem(503, "Kafka unavailable", f"the operation's record was not stored: "
                      f"{type(e).__name__}", headers={"Retry-After": RETRY_AFTER_S}) from e
    await apply(pool, record, owner)


async def rebuild(pool: asyncpg.Pool, settings: CommonSettings) -> int:
    """Create the table and the topic if missing and read the topic to its end into
    the table; returns how many records were applied (undecodable ones are logged and
    skipped).

    Raises:
        KafkaError, TimeoutError: Kafka could not be read.
        asyncpg.PostgresError, OSError: PostgreSQL could not be written.
    """
    await pool.execute(SCHEMA)
    topic = settings.topics.operations
    await ensure_compacted_topics(settings, [topic], timeout_s=math.inf)
    async with TopicReader(settings.bootstrap,
                           max_message_bytes=settings.max_message_bytes) as reader:
        records = await reader.read_to_end(topic)
    applied = 0
    for r in records:
        try:
            record = codec.decode(r.value)
            if not isinstance(record, OperationRecorded):
                raise DecodeError(f"a {type(record).__name__}, not an OperationRecorded")
        except DecodeError as e:
            log.warning("skipping record %d:%d of %s: %s", r.partition, r.offset, topic, e)
            continue
        await apply(pool, record)
        applied += 1
    return applied


async def claim_stale(pool: asyncpg.Pool, owner: str, lease_s: float = LEASE_S) -> list[str]:
    """Take over the running operations whose owner has not written for ``lease_s``
    (or that no gateway holds: read from the topic); returns their ids. Two gateways
    asking at once take each operation once (one ``update``)."""
    rows = await pool.fetch(
        "update operations set owner = $1, heartbeat_at = now() where state = 'running'"
        " and (heartbeat_at is null or heartbeat_at < now() - make_interval(secs => $2))"
        " returning operation_id", owner, lease_s)
    return [r["operation_id"] for r in rows]


async def read(pool: asyncpg.Pool, operation_id: str) -> Any:
    """The row of ``operation_id`` (None: unknown)."""
    return await pool.fetchrow("select * from operations where operation_id = $1",
                               operation_id)


def record_of(row: Any) -> OperationRecorded:
    """The record a row holds (to go on with it)."""
    return OperationRecorded(row["operation_id"], int(row["updated_at"].timestamp() * 1000),
                             row["state"], row["doc"], row["tenant"])
