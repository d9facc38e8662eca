"""Connections to PostgreSQL, which holds the projection (its tables: ``schema``):
pools that create the schema, credentials added to a DSN, errors that mean "try again
later", and per-name advisory locks."""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import orjson

from services.common.blobs.store import BLOB_REFS_SCHEMA, BLOBS_SCHEMA
from services.common.schema import DEFINITIONS_SCHEMA, SCHEMA, WEBHOOKS_SCHEMA
from services.common.settings import PgAuth, pg_auth_from_env

NOTIFY_CHANNEL = "headwater_events"
"""The projector's ``NOTIFY`` channel naming the workflows whose rows changed."""
LOGS_NOTIFY_CHANNEL = "headwater_task_logs"
"""The projector's ``NOTIFY`` channel naming the workflows whose task logs grew."""

UNAVAILABLE: tuple[type[Exception], ...] = (
    OSError,  # refused, reset, unreachable; TimeoutError is an OSError too
    asyncpg.PostgresConnectionError,  # SQLSTATE class 08: the connection failed or was lost
    asyncpg.InterfaceError,  # the connection or the pool is closed
    asyncpg.exceptions.OperatorInterventionError,  # class 57P: shutting down, starting up
    asyncpg.exceptions.InsufficientResourcesError,  # class 53: too many connections, disk full
)
"""Errors that mean PostgreSQL cannot answer now (not that a statement is wrong): retry
later (the gateway answers 503, the projector tries again)."""

async def init_connection(conn: asyncpg.Connection) -> None:
    """jsonb in and out as Python values, through orjson (every connection to the
    projection is set up so, so that all of them store the same bytes)."""
    await conn.set_type_codec(
        "jsonb", schema="pg_catalog", format="text",
        encoder=lambda v: orjson.dumps(v).decode(), decoder=orjson.loads,
    )


def dsn_password(dsn: str) -> str | None:
    """The password a PostgreSQL URI carries (``user:password@`` or ``?password=``)."""
    parts = urllib.parse.urlsplit(dsn)
    query = urllib.parse.parse_qs(parts.query).get("password")
    return parts.password or (query[-1] if query else None)


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password, if any, replaced by ``***``: what may be logged."""
    parts = urllib.parse.urlsplit(dsn)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rpartition('@')[2]}"
    query = urllib.parse.urlencode(
        [(k, "***" if k == "password" else v)
         for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)], safe="*")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def connect_kwargs(dsn: str, auth: PgAuth | None = None) -> dict[str, Any]:
    """asyncpg's keyword arguments (``asyncpg.connect``, ``create_pool``) that add
    ``auth`` to ``dsn``: ``password`` unless the DSN has one (the DSN's wins),
    ``ssl`` (libpq's ``sslmode`` names, which asyncpg takes) when set.

    Args:
        dsn: a PostgreSQL URI.
        auth: the password and ``sslmode``; None: the environment's
            (``HEADWATER_PG_PASSWORD[_FILE]``, ``HEADWATER_PG_SSLMODE``).

    Raises:
        ValueError: ``auth`` is None and the environment's settings are bad.
    """
    auth = pg_auth_from_env() if auth is None else auth
    kwargs: dict[str, Any] = {}
    if auth.password and not dsn_password(dsn):
        kwargs["password"] = auth.password
    if auth.sslmode:
        kwargs["ssl"] = auth.sslmode
    return kwargs


async def connect(dsn: str, *, auth: PgAuth | None = None, **kwargs: Any) -> asyncpg.Connection:
    """``asyncpg.connect(dsn, **kwargs)`` with ``auth`` added (see ``connect_kwargs``).

    Raises:
        OSError or asyncpg.PostgresError: PostgreSQL is unreachable or refused.
    """
    return await asyncpg.connect(dsn, **connect_kwargs(dsn, auth), **kwargs)


async def connect_pool(dsn: str, timeout_s: float = 60.0, max_size: int = 10,
                       auth: PgAuth | None = None) -> asyncpg.Pool:
    """Open a pool and create the schema, retrying while PostgreSQL starts.

    Args:
        dsn: the projection's PostgreSQL URI.
        timeout_s: how long to keep trying while PostgreSQL is unreachable, seconds.
        max_size: the pool's most connections.
        auth: password and ``sslmode`` added to ``dsn`` (see ``connect_kwargs``);
            None: the environment's.

    Raises:
        OSError or asyncpg.PostgresError: still unreachable after ``timeout_s`` seconds
            (a refused password at once: it is not retried).
        ValueError: ``auth`` is None and the environment's settings are bad.
    """
    deadline = time.monotonic() + timeout_s
    extra = connect_kwargs(dsn, auth)
    while True:
        try:
            pool = await asyncpg.create_pool(dsn, min_size=1, max_size=max_size,
                                             init=init_connection, **extra)
            break
        except (OSError, asyncpg.CannotConnectNowError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    # Several services may create the schema at once; serialise with an advisory lock.
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("select pg_advisory_xact_lock(7420001)")
        await conn.execute(SCHEMA)
        await conn.execute(DEFINITIONS_SCHEMA)
        await conn.execute(BLOBS_SCHEMA)
        await conn.execute(BLOB_REFS_SCHEMA)
        await conn.execute(WEBHOOKS_SCHEMA)
    return pool


@contextlib.asynccontextmanager
async def name_locked(pool: asyncpg.Pool, lock_class: int,
                      name: str) -> AsyncIterator[asyncpg.Connection]:
    """One connection of ``pool`` holding the session advisory lock ``(lock_class,
    hashtext(name))`` (PostgreSQL's two-key ``pg_advisory_lock``) while the block runs:
    writers of one name take turns, across gateways.

    Args:
        pool: the projection's pool.
        lock_class: the lock's first key, one per kind of name (``7420002``
            definitions, ``7420003`` schedules; ``7420001`` is the schema's).
        name: the name whose writes are serialised.
    """
    async with pool.acquire() as conn:
        await conn.execute("select pg_advisory_lock($1, hashtext($2))", lock_class, name)
        try:
            yield conn
        finally:
            # A broken connection loses its session locks with it (and asyncpg's reset on
            # release unlocks every advisory lock anyway).
            if not conn.is_closed():
                await conn.execute("select pg_advisory_unlock($1, hashtext($2))",
                                   lock_class, name)


NOTIFY_MAX_BYTES = 7900  # PostgreSQL's NOTIFY payload limit is 8000 bytes


def notify_payloads(workflow_ids: list[str]) -> list[str]:
    """Comma-joined workflow ids, split into payloads that fit a NOTIFY."""
    payloads: list[str] = []
    current: list[str] = []
    size = 0
    for wid in workflow_ids:
        n = len(wid.encode()) + 1
        if current and size + n > NOTIFY_MAX_BYTES:
            payloads.append(",".join(current))
            current, size = [], 0
        current.append(wid)
        size += n
    if current:
        payloads.append(",".join(current))
    return payloads
