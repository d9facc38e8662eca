"""Project the ``definitions`` topic into the registry's PostgreSQL tables, so that a lost
database is rebuilt from Kafka.

The gateway reads the whole topic (compacted: the last record of each key, and perhaps
older ones not compacted yet) when it starts, before it answers ready (``start``). Each
record is applied so that the order of application does not matter and applying one
twice changes nothing: a version row takes the record's content (a version's content
never changes), a head replaces the row's only when it is later (by revision, version, deleted:
``headwater.core.definitions.head_supersedes``, in SQL). What Kafka holds is stored:
rows it reaches are marked so. A record's ``tenant`` (None in records written before
definitions had tenants: shared) is its row's.
"""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import UTC, datetime

import asyncpg
from fastapi import FastAPI

from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.errors import DecodeError
from services.common.kafka.client import ensure_compacted_topics
from services.common.settings import CommonSettings
from services.common.topic_reader import TopicReader
from services.gateway.definitions import records as definition_records
from services.gateway.definitions.store import STORED

log = logging.getLogger("headwater.gateway")

RETRY_S = 1.0
"""How long to wait before reading the topic again after Kafka or PostgreSQL failed,
seconds."""


def _at(at_ms: int) -> datetime:
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC)


async def apply(conn: asyncpg.Connection | asyncpg.Pool,
                record: DefinitionStored | DefinitionHead) -> None:
    """Write one record of the topic into the tables (idempotent, in any order)."""
    if isinstance(record, DefinitionStored):
        await conn.execute(
            "insert into definitions (name, version, spec, input_schema, digest, state,"
            " created_at, tenant) values ($1, $2, $3, $4, $5, $6, $7, $8)"
            " on conflict (name, version) do update set spec = excluded.spec,"
            " input_schema = excluded.input_schema, digest = excluded.digest,"
            " state = excluded.state, created_at = excluded.created_at,"
            " tenant = excluded.tenant", record.name, record.version, record.spec,
            record.input_schema, record.digest, STORED, _at(record.at_ms), record.tenant)
        return
    # A head the gateway claimed but has not produced yet is later than every head on
    # Kafka, so it stays; the same head as the row's is marked stored.
    await conn.execute(
        "insert into definition_heads (name, version, deleted, state, updated_at, tenant,"
        " revision) values ($1, $2, $3, $4, $5, $6, $7) on conflict (name) do update set"
        " version = excluded.version, deleted = excluded.deleted, state = excluded.state,"
        " updated_at = excluded.updated_at, tenant = excluded.tenant,"
        " revision = excluded.revision where (definition_heads.revision,"
        " definition_heads.version, definition_heads.deleted) <= (excluded.revision,"
        " excluded.version, excluded.deleted)", record.name, record.version,
        record.deleted, STORED, _at(record.at_ms), record.tenant, record.revision)


async def rebuild(pool: asyncpg.Pool, settings: CommonSettings) -> int:
    """Read the definitions topic to its end into the tables.

    Args:
        pool: the projection's pool.
        settings: bootstrap, the largest record size and the topic names.

    Returns:
        How many records were applied (undecodable ones are logged and skipped).

    Raises:
        KafkaError, TimeoutError: Kafka could not be read.
        asyncpg.PostgresError, OSError: PostgreSQL could not be written.
    """
    topic = settings.topics.definitions
    async with TopicReader(settings.bootstrap,
                           max_message_bytes=settings.max_message_bytes) as reader:
        records = await reader.read_to_end(topic)
    applied = 0
    async with pool.acquire() as conn:
        for r in records:
            try:
                record = definition_records.decode(r.value)
            except DecodeError as e:
                log.warning("skipping record %d:%d of %s: %s", r.partition, r.offset, topic, e)
                continue
            await apply(conn, record)
            applied += 1
    return applied


async def start(app: FastAPI) -> None:
    """Create the compacted definitions topic if it is missing and read it into the
    tables; try again until both succeed (the gateway is not ready meanwhile).

    Args:
        app: the gateway's app, whose runtime (``state.hw``) has its pool and settings.
    """
    hw = app.state.hw
    settings: CommonSettings = hw.settings
    while True:
        try:
            await ensure_compacted_topics(settings, [settings.topics.definitions],
                                          timeout_s=math.inf)
            applied = await rebuild(hw.pool, settings)
            log.info("read %d records (versions and heads) from %s", applied,
                     settings.topics.definitions)
            return
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.warning("reading the definitions topic failed (%r); reading it again", e)
        await asyncio.sleep(RETRY_S)
